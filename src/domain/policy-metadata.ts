/**
 * What today's SyftHub clients read of a query answer to show what a query was charged or why it was
 * refused (API-CONTRACT 10.2): a `policy_metadata` envelope on 200 answers and on policy refusals alike.
 * All keys snake_case, as on the wire.
 */

export type PolicyOutcome = 'success' | 'payment_required' | 'policy_violation' | 'access_denied' | 'rate_limited';

type ReasonCode = 'NO_PRICING_TIER' | 'INSUFFICIENT_BALANCE' | 'PAYMENT_REQUIRED' | 'ACCESS_DENIED' | 'RATE_LIMITED';

export interface PolicyEntry {
  policy_type: string;
  kind: 'payment' | 'access' | 'rate_limit' | 'transform';
  /** `pending`: an MPP payment sent whose receipt had not come when the answer went out (API-CONTRACT 10.3). */
  status: 'charged' | 'pending' | 'refunded' | 'free' | 'rejected' | 'applied' | 'skipped';
  amount: number | null;
  currency: 'USD' | null;
  recipient: { username: string | null; email: string | null; wallet_address: string | null } | null;
  transaction: { rail: 'mpp' | 'accounting'; id: string; reference: null } | null;
  reason_code: ReasonCode | null;
  reason: string | null;
  details: Record<string, unknown>;
}

export interface PolicyMetadata {
  outcome: PolicyOutcome;
  /** The entries of the policies that already ran first, the refusing one last. */
  entries: PolicyEntry[];
}

/** An entry with every optional field empty: the caller says what the policy did. */
export function policyEntry(fields: Pick<PolicyEntry, 'policy_type' | 'kind' | 'status'> & Partial<PolicyEntry>): PolicyEntry {
  return {
    amount: null,
    currency: null,
    recipient: null,
    transaction: null,
    reason_code: null,
    reason: null,
    details: {},
    ...fields,
  };
}
