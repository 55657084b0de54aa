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
  /** The `X-Payment` header the caller sent: an MPP credential (API-CONTRACT 10.3). */
  readonly paymentCredential: string | undefined;
  /** The documents the query asks for (its `limit`): what a price per document charges for (API-CONTRACT 10.3 point 4). */
  readonly documentsAsked: number;
}

/** How the query ended, for the post-hooks. */
export interface QueryOutcome {
  readonly succeeded: boolean;
  readonly datasetCost: number;
  readonly modelCost: number;
  readonly tokens: number;
  /** The model's usage, when one answered. */
  readonly promptTokens?: number;
  readonly completionTokens?: number;
}

/** The answer is ready: how the query went, and the usage row it will write (kept with a payment in flight). */
export interface AnsweredQuery {
  readonly outcome: QueryOutcome;
  readonly usage: Record<string, unknown>;
}

/** The generated answer as a policy that rewrites it sees it (`transformAnswer`). */
export interface GeneratedText {
  readonly content: string;
  /** Its completion tokens, as the model counted them. */
  readonly tokens: number;
}

/** One call of the endpoint's model on behalf of a policy: its instructions, the text, and how long its answer may be. */
export interface ModelCall {
  /** What the call is for, as the owner reads it before a failure of the call ("The PII filter"). */
  readonly purpose: string;
  readonly system: string;
  readonly user: string;
  readonly maxTokens: number;
}

export interface ModelCallResult {
  readonly text: string;
  /** `length` when the answer was cut at `maxTokens`. */
  readonly finishReason: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** USD, at the model's prices. */
  readonly cost: number;
}

/**
 * The endpoint's model, lent by the running query to a policy that rewrites the answer (policies/ may not
 * import the model runner). The query counts every call's tokens and cost as the query's own; a failure
 * is the model's (a 502 the consumer reads in plain words).
 */
export interface AnswerModel {
  call(call: ModelCall, signal?: AbortSignal): Promise<ModelCallResult>;
}

/** The largest call a policy may make for an answer of `answerTokens`, for the query's cost ceiling. */
export interface ModelCallBound {
  /** Characters of the prompt besides the answer (instructions). */
  readonly instructionCharacters: number;
  /** The answer's tokens, which the prompt carries too. */
  readonly answerTokens: number;
  readonly maxTokens: number;
}

/**
 * One policy at run time. `pre` runs before the search and may refuse the query by throwing a
 * PolicyError; whatever it reserved is settled by `post`, which always runs once `pre` succeeded.
 * `entry` says what it did so far, for the answer's `policy_metadata` (API-CONTRACT 10.2).
 * A payment policy has one more step, `settle`, which collects the payment once the answer is ready and before the post-hooks
 * (a failure there fails the query: nothing is charged for an answer that was not delivered, and nothing
 * delivered that was not paid). While `holdsAnswer` is true, no part of the answer may leave before `settle`.
 * `settlementId` names the payment settled (the settlement journal's row), so that the usage row of its
 * answer is written once, by this query or by the reconciler after a crash.
 * A policy that rewrites the generated answer (`pii_filter`) has `transformAnswer`: it runs once the answer is
 * generated whole, before `settle` and before any of it leaves, and its failure fails the query; `modelCalls`
 * says the most it will ask of the model, for the query's cost ceiling.
 */
export interface PolicyHook {
  pre(context: PolicyContext): Promise<void>;
  transformAnswer?(context: PolicyContext, answer: GeneratedText, model: AnswerModel, signal?: AbortSignal): Promise<string>;
  modelCalls?(answerTokens: number): ModelCallBound[];
  settle?(context: PolicyContext, answered: AnsweredQuery): Promise<void>;
  settlementId?(): string | undefined;
  holdsAnswer?(): boolean;
  post(context: PolicyContext, outcome: QueryOutcome): Promise<void>;
  entry(): PolicyEntry;
}

/**
 * The specification's execution order, whatever order the policies were created in; payment (`mpp`) comes
 * after the policies that may refuse, so that no challenge is issued, and no credential taken, for a query
 * another policy refuses. `pii_filter` refuses nothing and works on the answer: its entry comes last.
 */
const POLICY_ORDER: readonly PolicyType[] = ['access', 'rate_limit', 'accounting', 'mpp', 'pii_filter'];

export function inPolicyOrder<P extends Pick<PolicyRecord, 'policy_type'>>(policies: readonly P[]): P[] {
  return [...policies].sort((a, b) => POLICY_ORDER.indexOf(a.policy_type) - POLICY_ORDER.indexOf(b.policy_type));
}
