import type { FastifyRequest } from 'fastify';

/**
 * Where a request comes from, as far as knode can tell (API-CONTRACT 3). knode never sits behind a
 * proxy it knows of, except the tunnel, which connects from this machine and says who it forwards for.
 */

/** Host names that can only mean this machine (with any port). */
const LOOPBACK_HOST_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Headers a proxy or tunnel adds; their presence means the request did not start on this machine. */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip'] as const;

/** 127.0.0.0/8 and ::1, in either IPv6 or IPv4-mapped form. */
function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const plain = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return plain === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(plain);
}

/** The `Host` header split into a lower-case host name (IPv6 in brackets) and its port, if it parses. */
export function requestHost(request: FastifyRequest): { hostname: string; port: string } | undefined {
  const header = request.headers.host;
  if (typeof header !== 'string' || header === '') return undefined;
  try {
    const url = new URL(`http://${header}`);
    // `http://host:80` parses with an empty port: keep what the client wrote, so 80 compares as 80.
    const port = /:(\d+)$/.exec(header)?.[1] ?? '';
    return { hostname: url.hostname.toLowerCase(), port };
  } catch {
    return undefined;
  }
}

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOST_NAMES.has(hostname);
}

function isForwarded(request: FastifyRequest): boolean {
  return FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined);
}

/**
 * Made directly on this machine by a local tool or knode's own console: a loopback peer, a loopback `Host`,
 * no forwarding header, and no `Origin` but knode's own. What arrives through the tunnel (loopback peer,
 * public host, X-Forwarded-For) or from another machine is not, and neither is a web page of another origin
 * in the owner's browser (a Vite dev server on localhost:5173, any local page): CORS may let it read
 * answers, but it must bring a token like a remote client. Development mode trusts only these requests.
 */
export function isDirectLocal(request: FastifyRequest): boolean {
  const host = requestHost(request);
  const origin = request.headers.origin;
  return (
    isLoopbackAddress(request.socket.remoteAddress) &&
    host !== undefined &&
    isLoopbackHost(host.hostname) &&
    !isForwarded(request) &&
    (origin === undefined || isSameOrigin(origin, request))
  );
}

/** The page was served by this very server (e.g. a console at `/`): its origin's host is the request's Host. */
export function isSameOrigin(origin: string, request: FastifyRequest): boolean {
  try {
    const page = new URL(origin);
    // Parsed alike, so that `localhost:80` and `http://localhost` compare equal.
    return request.headers.host !== undefined && page.host === new URL(`${page.protocol}//${request.headers.host}`).host;
  } catch {
    return false;
  }
}

/**
 * The address limits count by: the peer, unless the peer is this machine forwarding for someone (the
 * tunnel, a local reverse proxy), then the last address it forwarded for.
 */
export function clientIp(request: FastifyRequest): string {
  const peer = request.socket.remoteAddress ?? 'unknown';
  const forwarded = request.headers['x-forwarded-for'];
  if (!isLoopbackAddress(peer) || forwarded === undefined) return peer;
  const last = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded)
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .at(-1);
  return last ?? peer;
}

/** A loopback peer with no forwarding header: local tools and tests, which failed-login limits leave alone. */
export function isLocalPeer(request: FastifyRequest): boolean {
  return isLoopbackAddress(request.socket.remoteAddress) && !isForwarded(request);
}
