import { isIP } from 'node:net';
import { displayUrl } from '../syfthub/hub-errors.ts';

const DETECT_TIMEOUT_MS = 5_000;

/**
 * This machine's public IP address, as a "what is my IP" service sees it (SVC_PUBLIC_IP_URL,
 * https://api.ipify.org by default, which answers plain text; `{"ip": ...}` is understood too).
 */
export async function detectPublicIp(
  serviceUrl: string,
  /** The outbound module's fetch (the operator's reach): an answer is read to 1 MB at most. */
  fetcher: (url: string, init: RequestInit) => Promise<Response>,
  signal?: AbortSignal,
): Promise<string> {
  const signals = [AbortSignal.timeout(DETECT_TIMEOUT_MS), ...(signal ? [signal] : [])];
  const response = await fetcher(serviceUrl, { headers: { accept: 'text/plain, application/json' }, signal: AbortSignal.any(signals) });
  if (!response.ok) throw new Error(`${displayUrl(serviceUrl)} answered ${response.status}`);
  const text = (await response.text()).trim().slice(0, 200);
  let ip = text;
  if (text.startsWith('{')) {
    const body = JSON.parse(text) as { ip?: unknown };
    ip = typeof body.ip === 'string' ? body.ip.trim() : '';
  }
  if (isIP(ip) === 0) throw new Error(`${displayUrl(serviceUrl)} did not answer an IP address`);
  return ip;
}

/** The URL at which this knode answers on that address. */
export function publicUrlFor(ip: string, port: number): string {
  return isIP(ip) === 6 ? `http://[${ip}]:${port}` : `http://${ip}:${port}`;
}
