import type { PolicyEntry } from '../domain/policy-metadata.ts';
import type { Tenant } from '../domain/principal.ts';
import type { PolicyRecord } from './codec.ts';
import type { PolicyType } from './configuration-schema.ts';

/** What every hook knows of the query it guards (the query pipeline passes more; hooks need no more). */
export interface PolicyContext {
  readonly tenant: Tenant;
  readonly endpoint: { readonly id: string; readonly slug: string };
  /** From the verified credential, never from the body (specification, Query request). */
  readonly senderEmail: string;
  /** The accounting token the caller sent (the query's `transaction_token`). */
  readonly transactionToken: string | null | undefined;
  /** The most this query can cost: dataset price plus the model's price for the prompt and max_tokens. */
  readonly maxCost: number;
}

/** How the query ended, for the post-hooks. */
export interface QueryOutcome {
  readonly succeeded: boolean;
  readonly datasetCost: number;
  readonly modelCost: number;
  readonly tokens: number;
}

/**
 * One policy at run time. `pre` runs before the search and may refuse the query by throwing a
 * PolicyError; whatever it reserved is settled by `post`, which always runs once `pre` succeeded.
 * `entry` says what it did so far, for the answer's `policy_metadata` (API-CONTRACT 10.2).
 */
export interface PolicyHook {
  pre(context: PolicyContext): Promise<void>;
  post(context: PolicyContext, outcome: QueryOutcome): Promise<void>;
  entry(): PolicyEntry;
}

/** The specification's execution order, whatever order the policies were created in. */
export const POLICY_ORDER: readonly PolicyType[] = ['access', 'rate_limit', 'accounting'];

export function inPolicyOrder<P extends Pick<PolicyRecord, 'policy_type'>>(policies: readonly P[]): P[] {
  return [...policies].sort((a, b) => POLICY_ORDER.indexOf(a.policy_type) - POLICY_ORDER.indexOf(b.policy_type));
}
