import type { FixedWindows, WindowQuota } from '../db/fixed-windows.ts';
import { PolicyError } from '../domain/errors.ts';
import { type PolicyEntry, policyEntry } from '../domain/policy-metadata.ts';
import type { PolicyOfType } from './codec.ts';
import type { PolicyContext, PolicyHook } from './hooks.ts';

const RATE_LIMIT = { policy_type: 'rate_limit', kind: 'rate_limit' } as const;

const PERIODS = { s: ['second', 1], m: ['minute', 60], h: ['hour', 3600], d: ['day', 86_400] } as const;

interface RateQuota extends WindowQuota {
  periodName: string;
}

/** `10/m` of one policy for one caller, as a fixed-window quota keyed by policy and sender e-mail. */
function rateQuota(policy: PolicyOfType<'rate_limit'>, senderEmail: string): RateQuota {
  // The schema's pattern (configuration-schema.ts) guarantees `<count>/<s|m|h|d>`.
  const [count, unit] = policy.configuration.rate.split('/') as [string, keyof typeof PERIODS];
  const [periodName, periodSeconds] = PERIODS[unit];
  return { key: `policy:${policy.id}:${senderEmail.toLowerCase()}`, limit: Number(count), periodSeconds, periodName };
}

/**
 * Every rate_limit policy of an endpoint applies, and they are checked and counted together in one
 * transaction: a refused query uses up none of them, and concurrent queries never exceed any.
 */
async function enforceRateLimits(windows: FixedWindows, quotas: RateQuota[]): Promise<void> {
  const verdict = await windows.consume(quotas);
  if (verdict.allowed) return;
  const quota = verdict.quota as RateQuota;
  const reason = `Maximum ${quota.limit} requests per ${quota.periodName}`;
  const entry = policyEntry({ ...RATE_LIMIT, status: 'rejected', reason_code: 'RATE_LIMITED', reason });
  throw new PolicyError('rate_limited', 'Rate Limited', reason, entry, 'rate_limited', Math.max(1, Math.ceil(verdict.retryAfterSeconds)));
}

/** All rate_limit policies of one endpoint, as one pre-hook. */
export class RateLimitHook implements PolicyHook {
  constructor(
    private readonly windows: FixedWindows,
    private readonly policies: readonly PolicyOfType<'rate_limit'>[],
  ) {}

  async pre(context: PolicyContext): Promise<void> {
    await enforceRateLimits(
      this.windows,
      this.policies.map((policy) => rateQuota(policy, context.senderEmail)),
    );
  }

  async post(): Promise<void> {}

  entry(): PolicyEntry {
    return policyEntry({ ...RATE_LIMIT, status: 'applied' });
  }
}
