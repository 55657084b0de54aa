import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.ts';
import type { Config } from '../config.ts';
import type { FixedWindows, WindowQuota } from '../db/fixed-windows.ts';
import { TooManyRequestsError } from './errors.ts';

/**
 * The general API limits (specification, Limits; API-CONTRACT 7): per tenant for authenticated requests,
 * per client IP for anonymous ones, an hourly and a per-minute window, 429 with Retry-After when either is used up.
 */
export class ApiLimiter {
  constructor(
    private readonly config: Config,
    private readonly windows: FixedWindows,
  ) {}

  async check(request: FastifyRequest, principal: Principal | null): Promise<void> {
    const subject = principal ? `tenant:${principal.tenant.id}` : `ip:${request.ip}`;
    const verdict = await this.windows.consume(this.quotas(subject));
    if (!verdict.allowed) throw new TooManyRequestsError(verdict.retryAfterSeconds);
  }

  private quotas(subject: string): WindowQuota[] {
    const quotas: WindowQuota[] = [];
    if (this.config.rateLimitPerHour > 0) {
      quotas.push({ key: `api:${subject}:h`, limit: this.config.rateLimitPerHour, periodSeconds: 3600 });
    }
    if (this.config.rateLimitPerMinute > 0) {
      quotas.push({ key: `api:${subject}:m`, limit: this.config.rateLimitPerMinute, periodSeconds: 60 });
    }
    return quotas;
  }
}
