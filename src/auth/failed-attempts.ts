import type { FastifyRequest } from 'fastify';
import type { FixedWindows, WindowQuota } from '../db/fixed-windows.ts';
import { TooManyRequestsError } from '../domain/errors.ts';
import { clientIp, isLocalPeer } from '../http/client.ts';

/** Failed authentications allowed per client address and minute before it must wait (API-CONTRACT 3). */
const FAILED_AUTH_PER_MINUTE = 10;

/**
 * Slows down guessing of passwords, keys and tokens: every 401 counts against the client's address, and
 * an address with 10 in the current minute gets 429 with Retry-After on every route until the minute
 * ends, before its credentials are even looked at. Direct local requests (tools on this machine, tests)
 * are not counted; what comes through the tunnel is counted by the address it was forwarded for.
 */
export class FailedAuthLimiter {
  constructor(private readonly windows: FixedWindows) {}

  async check(request: FastifyRequest): Promise<void> {
    if (isLocalPeer(request)) return;
    const verdict = await this.windows.peek([quota(request)]);
    if (!verdict.allowed)
      throw new TooManyRequestsError(verdict.retryAfterSeconds, 'Too many failed authentication attempts: try again later');
  }

  async record(request: FastifyRequest, statusCode: number): Promise<void> {
    if (statusCode !== 401 || isLocalPeer(request)) return;
    await this.windows.consume([quota(request)]);
  }
}

function quota(request: FastifyRequest): WindowQuota {
  return { key: `auth-failures:ip:${clientIp(request)}:m`, limit: FAILED_AUTH_PER_MINUTE, periodSeconds: 60 };
}
