import type { FastifyBaseLogger } from 'fastify';
import type { Insertable } from 'kysely';
import type { QueryUsageTable } from '../db/schema.ts';
import { errorMessage, PolicyError } from '../domain/errors.ts';
import type { PolicyEntry } from '../domain/policy-metadata.ts';
import type { Tenant } from '../domain/principal.ts';
import type { QueryOutcome } from '../policies/hooks.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import type { UsageRepository } from './usage-repository.ts';

/** Where finished queries are counted besides the usage table (metrics/metrics.ts implements it). */
interface QueryObserver {
  queryFinished(endpoint: string, outcome: string, seconds: number): void;
  policyRefused(policyType: string, outcome: string): void;
  tokensGenerated(tokens: number, seconds: number): void;
}

/** Where a recorded query's question goes (analytics/service.ts keeps its terms for the word cloud, never the text). */
interface QuestionObserver {
  questionAsked(asked: { tenantId: string; endpointId: string; origin: 'api' | 'playground'; question: string; at: Date }): Promise<void>;
}

export interface QueryRecordDeps {
  usage: Pick<UsageRepository, 'record' | 'recordOnce'>;
  observer?: QueryObserver;
  questions?: QuestionObserver;
  log: FastifyBaseLogger;
  /** When a query is recorded (its usage row's `created_at`, its question's hour). */
  clock: Clock;
}

/** Which query is recorded: what each of its records repeats. */
export interface RecordedQuery {
  readonly tenant: Tenant;
  readonly endpoint: { readonly id: string; readonly slug: string };
  readonly senderEmail: string;
  /** `playground`: the owner asked from the console. */
  readonly origin: 'api' | 'playground';
  /** When the query arrived (`performance.now()`), for its latency. */
  readonly arrived: number;
  /** What was asked (the last user message), for the question observer only: the usage row keeps no text. */
  readonly question: string;
}

/** How a query ended, as its record needs it. */
export interface QueryEnd {
  readonly outcome: QueryOutcome;
  /** The query's own failure, if it failed: a refusal the refusing policy keeps out of the usage writes no row. */
  readonly failure: unknown;
  /** What the record calls the error: the query's failure, else a post-hook's (none once an MPP payment was collected). */
  readonly error: unknown;
  /** An MPP payment was collected for the answer: its record may not fail the answer any more. */
  readonly paid: boolean;
  /** The payment collected (either rail), for the row's payment columns. */
  readonly payment: PolicyEntry | undefined;
  /** The settlement journal's row of that payment: the row is then written once, here or by the reconciler. */
  readonly settlementId: string | undefined;
  /** Time spent generating (for the tokens/s metric). */
  readonly generationSeconds: number;
}

/** The record a query leaves once it is over: its usage row, and its counts in the metrics. */
export class QueryRecord {
  constructor(
    private readonly deps: QueryRecordDeps,
    private readonly query: RecordedQuery,
  ) {}

  /**
   * The query's end counted (duration, outcome, a refusal's policy, tokens) and written to the usage:
   * every query, refusals included, but those the refusing policy keeps out (a 402 that only hands out a
   * challenge: its paid retry is the query).
   */
  async write(end: QueryEnd): Promise<void> {
    this.observe(end);
    if (end.failure instanceof PolicyError && !end.failure.recorded) return;
    const row = {
      ...this.usageRow(end.outcome, end.error),
      payment_rail: end.payment?.transaction?.rail ?? null,
      payment_amount: end.payment?.amount ?? null,
      payment_transaction: end.payment?.transaction?.id ?? null,
    };
    let recorded = true;
    try {
      // A paid answer's row is written once: here, or by the reconciler if this process stops first.
      if (end.settlementId) recorded = await this.deps.usage.recordOnce(row, end.settlementId);
      else await this.deps.usage.record(row);
    } catch (error) {
      if (!end.paid) throw error;
      recorded = false;
      this.deps.log.error({ err: error, endpoint: this.query.endpoint.slug }, 'the usage of a paid query could not be recorded');
    }
    if (recorded) await this.askedQuestion();
  }

  /** The question goes to its observer once its query is recorded; the answer never fails by it. */
  private async askedQuestion(): Promise<void> {
    const { questions, log } = this.deps;
    if (!questions) return;
    const { tenant, endpoint, origin, question } = this.query;
    try {
      await questions.questionAsked({
        tenantId: tenant.id,
        endpointId: endpoint.id,
        origin,
        question,
        at: new Date(this.deps.clock.now()),
      });
    } catch (error) {
      log.warn({ err: error, endpoint: endpoint.slug }, 'the terms of a question could not be kept for the analytics');
    }
  }

  /** The usage row of this query as it ends now, without the payment columns (they are the caller's). */
  usageRow(outcome: QueryOutcome, error: unknown): Insertable<QueryUsageTable> {
    return {
      tenant_id: this.query.tenant.id,
      endpoint_id: this.query.endpoint.id,
      sender_email: this.query.senderEmail,
      dataset_cost: outcome.datasetCost,
      model_cost: outcome.modelCost,
      total_cost: outcome.datasetCost + outcome.modelCost,
      tokens: outcome.tokens,
      status: error ? (error instanceof PolicyError ? 'refused' : 'error') : 'success',
      // A refusal's reason, not the 402's fixed detail.
      error: error ? (error instanceof PolicyError ? error.err : errorMessage(error)) : null,
      latency_ms: Math.round(performance.now() - this.query.arrived),
      prompt_tokens: outcome.promptTokens ?? null,
      completion_tokens: outcome.completionTokens ?? null,
      origin: this.query.origin,
      refused_by: error instanceof PolicyError ? error.entry.policy_type : null,
      created_at: isoNow(this.deps.clock),
    };
  }

  private observe({ outcome, error, generationSeconds }: QueryEnd): void {
    const observer = this.deps.observer;
    if (!observer) return;
    const refusal = error instanceof PolicyError ? error : undefined;
    const result = refusal ? refusal.metadata.outcome : error ? 'error' : 'success';
    observer.queryFinished(
      `${this.query.tenant.name}/${this.query.endpoint.slug}`,
      result,
      (performance.now() - this.query.arrived) / 1000,
    );
    if (refusal) observer.policyRefused(refusal.entry.policy_type, refusal.metadata.outcome);
    if (outcome.completionTokens) observer.tokensGenerated(outcome.completionTokens, generationSeconds);
  }
}
