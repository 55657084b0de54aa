import type { FastifyRequest } from 'fastify';
import { type Config, DEV_FRONTEND_ORIGIN } from '../config.ts';
import { ForbiddenError, MisdirectedRequestError, UnsupportedMediaTypeError } from '../domain/errors.ts';
import { isLoopbackHost, isSameOrigin, requestHost } from './client.ts';
import { isDevelopmentMode } from './development-mode.ts';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const JSON_TYPE = 'application/json';
const FORM_TYPE = 'application/x-www-form-urlencoded';
/** Addresses that mean "every interface": not a host name a client would send. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);

export interface RequestGuardDeps {
  config: Config;
  /** The host names of every tenant's public URL (where the hub and the tunnel send requests). */
  publicHosts: { publicHostnames(): Promise<readonly string[]> };
}

/**
 * Checks that come before credentials (API-CONTRACT 3), against a web page that makes a visitor's
 * browser call a knode on their laptop:
 * - state-changing routes take JSON only (415), so a cross-site HTML form cannot post to them, and refuse
 *   an `Origin` that CORS does not allow (403);
 * - in development mode, where local requests need no credentials, a `Host` that is neither loopback nor
 *   a public URL's host is refused (421): that is what a DNS-rebinding page sends.
 */
export class RequestGuard {
  private readonly allowedOrigins: ReadonlySet<string>;

  constructor(private readonly deps: RequestGuardDeps) {
    this.allowedOrigins = new Set([DEV_FRONTEND_ORIGIN, ...deps.config.corsOrigins]);
  }

  async check(request: FastifyRequest): Promise<void> {
    if (isDevelopmentMode(this.deps.config)) await this.checkHost(request);
    if (!STATE_CHANGING.has(request.method)) return;
    checkContentType(request);
    this.checkOrigin(request);
  }

  private async checkHost(request: FastifyRequest): Promise<void> {
    const host = requestHost(request);
    if (host === undefined) throw new MisdirectedRequestError('The request has no valid Host header');
    if (isLoopbackHost(host.hostname)) return;
    const bound = this.deps.config.host.toLowerCase();
    if (!WILDCARD_HOSTS.has(bound) && (host.hostname === bound || host.hostname === `[${bound}]`)) return;
    if ((await this.deps.publicHosts.publicHostnames()).includes(host.hostname)) return;
    throw new MisdirectedRequestError(
      `Host '${host.hostname}' is not served here: in development mode knode answers to localhost, 127.0.0.1, [::1], ` +
        'the address it listens on and its public URL',
    );
  }

  /** A browser always sends `Origin` on these methods; other clients send none, or one we allowed. */
  private checkOrigin(request: FastifyRequest): void {
    const origin = request.headers.origin;
    if (origin === undefined || this.allowedOrigins.has(origin) || isSameOrigin(origin, request)) return;
    throw new ForbiddenError(`Requests from the web page at '${origin}' are not allowed (SVC_CORS_ORIGINS lists the allowed ones)`);
  }
}

function checkContentType(request: FastifyRequest): void {
  const header = request.headers['content-type'];
  if (header === undefined) {
    const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
    if (hasBody) throw new UnsupportedMediaTypeError();
    return;
  }
  const type = header.split(';')[0]?.trim().toLowerCase();
  if (type === JSON_TYPE) return;
  if (type === FORM_TYPE && request.routeOptions.config.forms === true) return;
  throw new UnsupportedMediaTypeError(
    request.routeOptions.config.forms === true ? `Content-Type must be ${JSON_TYPE} or ${FORM_TYPE}` : `Content-Type must be ${JSON_TYPE}`,
  );
}
