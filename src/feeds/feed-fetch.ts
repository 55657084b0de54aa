import type { OutboundFetch } from '../outbound/fetch.ts';

/**
 * One conditional GET of a feed through the outbound module (outbound/fetch.ts: the address checks, the
 * size limit, the timeout), its redirects followed here hop by hop, since a feed moves between hosts
 * (feedburner, a CDN) where the module follows only the same host: every hop must be https, and each is a
 * new call through the module, so its host is checked like the first. ETag and Last-Modified from the last
 * answer go out as If-None-Match and If-Modified-Since; a 304 means nothing is read.
 */

/** Hops a feed may redirect through, as browsers and feed readers allow about as many. */
const MAX_HOPS = 5;

/** What the last successful answer said, for the next conditional GET. */
export interface FeedValidators {
  readonly etag: string | null;
  readonly lastModified: string | null;
}

export type FeedAnswer = { readonly unchanged: true } | ({ readonly unchanged: false; readonly body: string } & FeedValidators);

/** A feed could not be read: the reason is shown on the dataset and the feed is tried again at the next poll. */
export class FeedFetchError extends Error {
  override readonly name = 'FeedFetchError';
}

export interface FeedFetchOptions {
  /** The outbound fetch of the dataset's tenant, made with `redirect: 'manual'`. */
  readonly fetch: OutboundFetch;
  readonly signal?: AbortSignal;
  /** Test-only: the certificate authority a local https feed server's certificate is trusted through. */
  readonly tls?: { readonly ca: string };
}

/** Whether a URL may be fetched as a feed: https only, at the first hop and every later one. */
function feedUrlRefusal(url: URL): string | undefined {
  return url.protocol === 'https:' ? undefined : `only https feeds are read (got ${url.protocol.replace(/:$/, '')})`;
}

export async function fetchFeed(feedUrl: string, validators: FeedValidators, options: FeedFetchOptions): Promise<FeedAnswer> {
  let url = new URL(feedUrl);
  for (let hop = 0; ; hop++) {
    const refused = feedUrlRefusal(url);
    if (refused) throw new FeedFetchError(hop === 0 ? refused : `redirected to ${url.toString()}: ${refused}`);
    const response = await call(url, validators, options);
    if (response.status === 304) {
      await discard(response);
      return { unchanged: true };
    }
    const next = redirectOf(response, url);
    if (next) {
      await discard(response);
      if (hop + 1 >= MAX_HOPS) throw new FeedFetchError(`more than ${MAX_HOPS} redirects`);
      url = next;
      continue;
    }
    return read(response, url);
  }
}

/** One GET through the outbound module, conditional on what the last answer said. */
async function call(url: URL, validators: FeedValidators, options: FeedFetchOptions): Promise<Response> {
  const headers: Record<string, string> = {
    accept: 'application/rss+xml, application/atom+xml, application/rdf+xml, application/xml;q=0.9, text/xml;q=0.8, */*;q=0.5',
  };
  if (validators.etag) headers['if-none-match'] = validators.etag;
  if (validators.lastModified) headers['if-modified-since'] = validators.lastModified;
  const init = { headers, signal: options.signal, ...(options.tls ? { tls: options.tls } : {}) };
  try {
    return await options.fetch(url.toString(), init as RequestInit);
  } catch (error) {
    throw new FeedFetchError(`${url.host}: ${errorText(error)}`, { cause: error });
  }
}

/** Where a redirect leads (resolved against the URL asked), or undefined when the answer is not one. */
function redirectOf(response: Response, url: URL): URL | undefined {
  const location = response.headers.get('location');
  if (response.status < 300 || response.status >= 400 || !location) return undefined;
  try {
    return new URL(location, url);
  } catch {
    throw new FeedFetchError(`redirected to an address that is not a URL: ${location.slice(0, 200)}`);
  }
}

/** The feed document of a successful answer, with the validators for the next poll. */
async function read(response: Response, url: URL): Promise<FeedAnswer> {
  if (!response.ok) {
    await discard(response);
    throw new FeedFetchError(`${url.host} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`);
  }
  try {
    const body = await response.text();
    return { unchanged: false, body, etag: response.headers.get('etag'), lastModified: response.headers.get('last-modified') };
  } catch (error) {
    throw new FeedFetchError(`${url.host}: ${errorText(error)}`, { cause: error });
  }
}

async function discard(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
