import { ForbiddenError } from './errors.ts';

/**
 * How many of each resource a tenant may hold (SVC_TENANT_QUOTAS, API-CONTRACT 2): endpoints, datasets and
 * models per tenant, policies per endpoint; 0 is unlimited. Without them one member could create 10,000
 * endpoints in half a minute, and every list and heartbeat of the tenant would carry them.
 */
export interface TenantQuotas {
  readonly endpoints: number;
  readonly datasets: number;
  readonly models: number;
  readonly policies: number;
}

export const DEFAULT_TENANT_QUOTAS: TenantQuotas = { endpoints: 500, datasets: 100, models: 100, policies: 50 };

/** Refused for the quota it would exceed: 403, naming the quota. */
export class QuotaExceededError extends ForbiddenError {
  constructor(quota: keyof TenantQuotas, limit: number, holder: 'tenant' | 'endpoint') {
    super(
      `Quota reached: a${holder === 'endpoint' ? 'n' : ''} ${holder} may have at most ${limit} ${quota} (SVC_TENANT_QUOTAS ${quota}=${limit})`,
    );
  }
}
