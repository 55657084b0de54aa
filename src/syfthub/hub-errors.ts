import { BadGatewayError, BadRequestError, ServiceUnavailableError } from '../domain/errors.ts';
import { shortMessage } from '../outbound/upstream.ts';

/**
 * What can go wrong talking to a marketplace (SyftHub), as HTTP errors whose `detail` names the
 * marketplace and says what happened. No detail ever carries a password or a token: the hub's own
 * words are scrubbed of the secrets knode sent before they are quoted.
 */

/** The marketplace could not be asked: unreachable, too slow, or not taking logins right now (503). */
export class HubUnavailableError extends ServiceUnavailableError {}

/** The marketplace answered, but with an error (502); `status` and `reason` are what it said. */
export class HubAnswerError extends BadGatewayError {
  constructor(
    detail: string,
    readonly status: number,
    readonly reason: string,
  ) {
    super(detail);
  }
}

/**
 * The marketplace refused knode's username and password. With stored credentials that is the hub
 * failing knode (502); when credentials are being entered, the caller turns it into a 400 (`asBadRequest`).
 */
export class HubCredentialsError extends HubAnswerError {
  asBadRequest(): BadRequestError {
    return new BadRequestError(this.detail);
  }
}

/**
 * The hub's reason for an error answer, in one line: FastAPI's `detail` (a string, an object with a
 * `message`, or a list of validation issues) or a `message`, cut to 200 characters, else the status text.
 * Never the body's text: what answers at a marketplace's URL is whatever the URL points at (the body is read
 * through the outbound module, so 1 MB at most).
 */
export async function hubReason(response: Response, secrets: readonly (string | undefined)[]): Promise<string> {
  const text = await response.text().catch(() => '');
  let reason = '';
  try {
    reason = describeDetail((JSON.parse(text) as { detail?: unknown; message?: unknown }) ?? {});
  } catch {
    // not JSON: not quoted
  }
  return shortMessage(reason || response.statusText || 'no reason given', secrets);
}

function describeDetail(body: { detail?: unknown; message?: unknown; error?: unknown }): string {
  const detail = body.detail ?? body.message ?? body.error;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((issue) => {
        const { loc, msg } = (issue ?? {}) as { loc?: unknown; msg?: unknown };
        const where = Array.isArray(loc) ? `${loc.join('.')}: ` : '';
        return typeof msg === 'string' ? `${where}${msg}` : JSON.stringify(issue);
      })
      .join('; ');
  }
  if (detail && typeof detail === 'object') {
    const { message, error } = detail as { message?: unknown; error?: unknown };
    if (typeof message === 'string') return message;
    if (typeof error === 'string') return error;
    return JSON.stringify(detail);
  }
  return '';
}

/** Why a request never got an answer, without the URL's user information or any header. */
export function unreachableReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError')
      return `no answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}`;
    if (error.name === 'AbortError') return 'the request was cancelled (knode is shutting down)';
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

/** The URL as it may appear in messages: no user name or password, even if someone put them there. */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/+$/, '');
  } catch {
    return '(invalid URL)';
  }
}
