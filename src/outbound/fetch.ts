import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { OutboundRefusedError, OutboundTooLargeError } from './errors.ts';
import type { Reach } from './reach.ts';

/**
 * The one way knode calls another server (models, embedders, marketplaces, their accounting, the Tempo
 * RPC, the public-IP lookup). A `fetch` with these rules, whoever calls it (our code, or the `openai` and
 * `viem` clients, which take it as their `fetch`):
 * - the URL is parsed, and only http and https are called;
 * - the host is resolved and every address it has is checked against the caller's reach (reach.ts), and the
 *   connection goes to the address that was checked (the host still named in `Host` and TLS), so a DNS
 *   answer that changes between the check and the connection (rebinding) cannot lead anywhere else;
 * - a redirect is followed only on the same host (and re-checked), for GET and HEAD; any other comes back
 *   as the 3xx it is, so a bearer token never travels to a host nobody configured;
 * - at most `maxBytes` of an answer are read (1 MB unless a caller needs more for a success; an error
 *   answer never more than 1 MB): past it the connection is closed and the read fails, so a 2 GB answer
 *   costs a megabyte, not the server's memory;
 * - the answer's headers must come within `timeoutMs`; the caller's own signal bounds the rest.
 */

export const ONE_MEGABYTE = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_REDIRECTS = 5;

export interface OutboundOptions {
  /** The most of a successful answer read (1 MB); error answers are read to 1 MB at most anyway. */
  maxBytes?: number;
  /** How long the headers may take (30 s). */
  timeoutMs?: number;
  /** Resolves a host to its addresses: DNS unless a test brings its own. */
  lookup?: (host: string) => Promise<string[]>;
  /**
   * `manual`: no redirect is followed, every 3xx comes back as it is, for a caller that checks each hop
   * itself and calls it through this fetch again (feeds: every hop https, to any host).
   */
  redirect?: 'same-host' | 'manual';
}

export type OutboundFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

async function resolveAll(host: string): Promise<string[]> {
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map((entry) => entry.address);
}

/** A fetch bound to a reach and limits; pass it wherever a `fetch` is taken. */
export function outboundFetch(reach: Reach, options: OutboundOptions = {}): OutboundFetch & typeof fetch {
  const call: OutboundFetch = (input, init) => send(reach, options, input, init);
  return call as OutboundFetch & typeof fetch;
}

async function send(reach: Reach, options: OutboundOptions, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const asked = await requestParts(input, init);
  let { url, method, body } = asked;
  const { headers, callerSignal } = asked;
  const maxBytes = options.maxBytes ?? ONE_MEGABYTE;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const lookup = options.lookup ?? resolveAll;

  for (let hop = 0; ; hop++) {
    const address = await checkedAddress(reach, url, lookup);
    // Our controller closes the connection past the size limit and when the headers are late.
    const own = new AbortController();
    const requestInit = { ...init, method, headers: withHost(headers, url), body };
    const response = await fetchPinned(url, address, requestInit, own, callerSignal, timeoutMs);
    const next = hop < MAX_REDIRECTS && options.redirect !== 'manual' ? await sameHostRedirect(response, url, method) : undefined;
    if (next) {
      url = next;
      if (response.status === 303) {
        method = 'GET';
        body = undefined;
      }
      continue;
    }
    const limit = response.ok ? maxBytes : Math.min(maxBytes, ONE_MEGABYTE);
    return bounded(response, limit, own, bareHost(url));
  }
}

/** What a fetch call asks for, from its init first and else from its Request. */
async function requestParts(input: string | URL | Request, init: RequestInit) {
  const request = input instanceof Request ? input : undefined;
  return {
    url: parseUrl(request ? request.url : String(input)),
    method: (init.method ?? request?.method ?? 'GET').toUpperCase(),
    headers: new Headers(init.headers ?? request?.headers),
    body: init.body ?? (request?.body ? await request.arrayBuffer() : undefined),
    callerSignal: init.signal ?? request?.signal ?? undefined,
  };
}

/** One request to the address checked for `url`, aborted by the caller or by `own` (and by it after `timeoutMs` without headers). */
async function fetchPinned(
  url: URL,
  address: string,
  init: RequestInit,
  own: AbortController,
  callerSignal: AbortSignal | undefined,
  timeoutMs: number,
): Promise<Response> {
  const signal = callerSignal ? AbortSignal.any([callerSignal, own.signal]) : own.signal;
  const timer = setTimeout(() => own.abort(new DOMException(`No answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  try {
    return await fetch(pinned(url, address), {
      ...init,
      redirect: 'manual',
      signal,
      // The certificate is checked for the host that was asked for, not for the address connected to.
      // (Checked by hand with a certificate for a name and a server on 127.0.0.1: verified against serverName.)
      ...(url.protocol === 'https:' && isIP(bareHost(url)) === 0
        ? { tls: { ...(init as { tls?: object }).tls, serverName: bareHost(url) } }
        : {}),
    } as RequestInit);
  } finally {
    clearTimeout(timer);
  }
}

/** Where a redirect leads when it is followed (a GET or HEAD to the same host), its body dropped; undefined otherwise. */
async function sameHostRedirect(response: Response, url: URL, method: string): Promise<URL | undefined> {
  const location = response.headers.get('location');
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  if (response.status < 300 || response.status >= 400 || !location) return undefined;
  const next = safeUrl(location, url);
  if (!next || bareHost(next) !== bareHost(url)) return undefined;
  await response.body?.cancel().catch(() => undefined);
  return next;
}

function parseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OutboundRefusedError('Not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundRefusedError(`Only http and https URLs are called (got ${url.protocol})`);
  return url;
}

function safeUrl(location: string, base: URL): URL | undefined {
  try {
    const url = new URL(location, base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** The one address the request connects to, after every address of the host has been checked. */
async function checkedAddress(reach: Reach, url: URL, lookup: (host: string) => Promise<string[]>): Promise<string> {
  const host = bareHost(url);
  const refused = reach.hostRefusal(host);
  if (refused) throw new OutboundRefusedError(refused);
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await lookup(host);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new TypeError(`Cannot resolve ${host}${typeof code === 'string' ? ` (${code})` : ''}`, { cause: error });
    }
  }
  if (addresses.length === 0) throw new TypeError(`Cannot resolve ${host}`);
  // Every address, not only the one used: a host that also resolves to a forbidden one is not trusted at all.
  for (const address of addresses) {
    const refusal = reach.addressRefusal(host, address);
    if (refusal) throw new OutboundRefusedError(refusal);
  }
  // IPv4 first when there is one: a pinned address gets no second try, and IPv6 routes are the ones often broken.
  return (addresses.find((address) => isIP(address) === 4) ?? addresses[0]) as string;
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** The URL with the checked address in place of the host name (its user information and path kept). */
function pinned(url: URL, address: string): string {
  if (bareHost(url) === address) return url.toString();
  const copy = new URL(url);
  copy.hostname = isIP(address) === 6 ? `[${address}]` : address;
  return copy.toString();
}

function withHost(headers: Headers, url: URL): Headers {
  const copy = new Headers(headers);
  copy.set('host', url.host);
  return copy;
}

/**
 * The answer with a body that fails past `limit` bytes. A declared length over it is refused before
 * anything is read; otherwise bytes are counted as they come, and the connection is closed there.
 */
function bounded(response: Response, limit: number, own: AbortController, host: string): Response {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    own.abort(new OutboundTooLargeError(host, limit));
    throw new OutboundTooLargeError(host, limit);
  }
  const source = response.body;
  if (!source) return response;
  const reader = source.getReader();
  let read = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      read += value.byteLength;
      if (read > limit) {
        const error = new OutboundTooLargeError(host, limit);
        own.abort(error);
        await reader.cancel(error).catch(() => undefined);
        controller.error(error);
        return;
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  const headers = new Headers(response.headers);
  // The body is already decoded: a client must not try to decode it again.
  headers.delete('content-encoding');
  headers.delete('content-length');
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}
