import type { Config } from '../config.ts';
import type { FixedWindows, WindowQuota } from '../db/fixed-windows.ts';
import { TooManyRequestsError } from '../domain/errors.ts';
import type { Principal } from '../domain/principal.ts';

/**
 * The general API limits (specification, Limits; API-CONTRACT 7): an hourly and a per-minute window,
 * 429 with Retry-After when either is used up. Management requests count per tenant (per client address
 * when anonymous); a query to an endpoint without rate_limit policies counts per caller and endpoint
 * (an endpoint with rate_limit policies is governed by those instead, rate-limit.ts).
 */
export class GeneralLimits {
  constructor(
    private readonly config: Config,
    private readonly windows: FixedWindows,
  ) {}

  /** `clientAddress` counts an anonymous request (see http/client.ts, clientIp). */
  async checkRequest(principal: Principal | null, clientAddress: string): Promise<void> {
    await this.consume(`api:${principal ? `tenant:${principal.tenant.id}` : `ip:${clientAddress}`}`);
  }

  /** `caller` is the sender's e-mail, or the client address of a query without one. */
  async checkQuery(endpointId: string, caller: string): Promise<void> {
    await this.consume(`query:${endpointId}:${caller}`);
  }

  private async consume(subject: string): Promise<void> {
    const quotas: WindowQuota[] = [];
    if (this.config.rateLimitPerHour > 0) quotas.push({ key: `${subject}:h`, limit: this.config.rateLimitPerHour, periodSeconds: 3600 });
    if (this.config.rateLimitPerMinute > 0) quotas.push({ key: `${subject}:m`, limit: this.config.rateLimitPerMinute, periodSeconds: 60 });
    const verdict = await this.windows.consume(quotas);
    if (!verdict.allowed) throw new TooManyRequestsError(verdict.retryAfterSeconds);
  }
}
