import type { FixedWindows } from '../db/fixed-windows.ts';
import { PolicyError } from '../domain/errors.ts';
import type { PolicyEntry, PolicyMetadata } from '../domain/policy-metadata.ts';
import type { Tenant } from '../domain/principal.ts';
import type { MppGateway } from '../payments/mpp.ts';
import type { AccountingService } from '../syfthub/accounting-service.ts';
import { AccessHook } from './access.ts';
import { AccountingHook } from './accounting-hook.ts';
import type { PolicyOfType, PolicyRecord } from './codec.ts';
import type { GeneralLimits } from './general-limits.ts';
import {
  type AnsweredQuery,
  type AnswerModel,
  type GeneratedText,
  inPolicyOrder,
  type ModelCallBound,
  type PolicyContext,
  type PolicyHook,
  type QueryOutcome,
} from './hooks.ts';
import { MppHook } from './mpp-hook.ts';
import { PiiFilterHook } from './pii-filter-hook.ts';
import { RateLimitHook } from './rate-limit.ts';

export interface PolicyHooksDeps {
  limits: Pick<GeneralLimits, 'checkQuery'>;
  windows: FixedWindows;
  /** The accounting service that settles a tenant's paid queries (marketplaces/service.ts implements it). */
  accounting: { accountingFor(tenant: Tenant): Promise<AccountingService | undefined> };
  /** MPP payments: the tenant's wallet, challenges, credentials and their broadcast (payments/mpp.ts). */
  payments: Pick<MppGateway, 'wallet' | 'challenge' | 'accept'>;
}

/** Builds the run-time hooks of a query from its endpoint's policies: the one place that tells policy types apart. */
export class PolicyHooks {
  constructor(private readonly deps: PolicyHooksDeps) {}

  /**
   * The hooks of one query, in the specification's order (hooks.ts). An endpoint without rate_limit policies
   * is governed by the general limits instead, per caller (`caller`: the sender's e-mail, else the client
   * address) and endpoint: checked here, before any hook, so their 429 is the API's and no query's refusal.
   */
  async forQuery(tenant: Tenant, endpointId: string, records: readonly PolicyRecord[], caller: string): Promise<HookSet> {
    const policies = inPolicyOrder(records);
    const rateLimits = policies.filter((policy): policy is PolicyOfType<'rate_limit'> => policy.policy_type === 'rate_limit');
    const prices = policies.filter((policy): policy is PolicyOfType<'mpp'> => policy.policy_type === 'mpp');
    const filters = policies.filter((policy): policy is PolicyOfType<'pii_filter'> => policy.policy_type === 'pii_filter');
    if (rateLimits.length === 0) await this.deps.limits.checkQuery(endpointId, caller);

    const hooks: PolicyHook[] = [];
    for (const policy of policies) {
      const hook = await this.hookOf(policy, { rateLimits, prices, filters }, tenant);
      if (hook) hooks.push(hook);
    }
    return new HookSet(hooks);
  }

  /** One policy's hook; a policy whose type has one hook for all is built once, at the first of them (undefined after). */
  private async hookOf(policy: PolicyRecord, grouped: GroupedPolicies, tenant: Tenant): Promise<PolicyHook | undefined> {
    switch (policy.policy_type) {
      case 'access':
        return new AccessHook(policy.configuration);
      case 'rate_limit':
        // All rate limits are one hook: they are checked and counted together.
        return policy === grouped.rateLimits[0] ? new RateLimitHook(this.deps.windows, grouped.rateLimits) : undefined;
      case 'mpp':
        // All prices are one hook too: the caller's tier is the first that applies to it.
        return policy === grouped.prices[0] ? new MppHook(grouped.prices, this.deps.payments) : undefined;
      case 'pii_filter':
        // One filter however many policies: one call of the model, with every policy's instructions.
        return policy === grouped.filters[0] ? new PiiFilterHook(grouped.filters) : undefined;
      default:
        return new AccountingHook(policy.configuration, await this.deps.accounting.accountingFor(tenant));
    }
  }
}

/** The policies of the types built as one hook for all of them. */
interface GroupedPolicies {
  rateLimits: PolicyOfType<'rate_limit'>[];
  prices: PolicyOfType<'mpp'>[];
  filters: PolicyOfType<'pii_filter'>[];
}

/**
 * The hooks of one query run as a set: each step in order over the hooks whose pre-hook passed, a
 * refusal's `policy_metadata` showing what the others did (the refusing one last), and what they
 * collected read from their entries. One set serves one query.
 */
export class HookSet {
  private readonly passed: PolicyHook[] = [];

  constructor(private readonly hooks: readonly PolicyHook[]) {}

  /** (b): the pre-hooks in order; the first refusal stops them (the caller then runs `post` for those that passed). */
  async pre(context: PolicyContext): Promise<void> {
    for (const hook of this.hooks) {
      try {
        await hook.pre(context);
      } catch (error) {
        if (error instanceof PolicyError) error.metadata.entries = [...this.entries(), error.entry];
        throw error;
      }
      this.passed.push(hook);
    }
  }

  /**
   * The generated answer rewritten by the hooks that rewrite it (a PII filter), in order, each given the
   * text the one before made: after generation, before `settle`, before anything of it leaves. A failure
   * fails the query as a failed generation does.
   */
  async transformAnswer(context: PolicyContext, answer: GeneratedText, model: AnswerModel, signal?: AbortSignal): Promise<string> {
    let content = answer.content;
    await this.step(async (hook) => {
      if (hook.transformAnswer) content = await hook.transformAnswer(context, { ...answer, content }, model, signal);
    });
    return content;
  }

  /** Whether a hook rewrites the answer: it is then generated whole, streamed or not, and rewritten before it leaves. */
  get transformsAnswer(): boolean {
    return this.passed.some((hook) => hook.transformAnswer !== undefined);
  }

  /** The model calls the hooks may make for an answer of `answerTokens` (asked before the pre-hooks: every hook's). */
  modelCalls(answerTokens: number): ModelCallBound[] {
    return this.hooks.flatMap((hook) => hook.modelCalls?.(answerTokens) ?? []);
  }

  /**
   * The answer is ready and nothing of it has left: the payments are collected now (an MPP transaction is
   * broadcast and confirmed). Before this, a failure costs the caller nothing; after it, nothing may fail.
   */
  settle(context: PolicyContext, answered: AnsweredQuery): Promise<void> {
    return this.step((hook) => hook.settle?.(context, answered));
  }

  /**
   * (e): every post-hook of the hooks that passed, in order, each whatever the others did. Answers their
   * failures, first first: what a failure means depends on how the query went, which the caller knows.
   */
  async post(context: PolicyContext, outcome: QueryOutcome): Promise<unknown[]> {
    const failures: unknown[] = [];
    for (const hook of this.passed) {
      try {
        await hook.post(context, outcome);
      } catch (error) {
        failures.push(error);
      }
    }
    return failures;
  }

  /** Whether the answer must be held until it is rewritten and paid for (a filtered or paid query: see `settle`). */
  get holdsAnswer(): boolean {
    return this.passed.some((hook) => hook.holdsAnswer?.() ?? false);
  }

  /** The answer's `policy_metadata` once the query is over (API-CONTRACT 10.2). */
  metadata(): PolicyMetadata {
    return { outcome: 'success', entries: this.entries() };
  }

  /** What the query was charged through MPP, in USD (its receipt in, or pending): paid on top of the costs it declares. */
  mppCharged(): number {
    return this.entries()
      .filter((entry) => isCollected(entry) && entry.transaction?.rail === 'mpp')
      .reduce((sum, entry) => sum + (entry.amount ?? 0), 0);
  }

  /** The first payment collected for the answer, on either rail: what the usage row records of it. */
  collectedPayment(): PolicyEntry | undefined {
    return this.entries().find((entry) => entry.kind === 'payment' && isCollected(entry) && entry.transaction);
  }

  /** The settlement journal's row of the payment collected, if one was: the usage row of its answer is written once. */
  settlementId(): string | undefined {
    return this.passed.map((hook) => hook.settlementId?.()).find((id) => id !== undefined);
  }

  private entries(except?: PolicyHook): PolicyEntry[] {
    return this.passed.filter((hook) => hook !== except).map((hook) => hook.entry());
  }

  /** Runs one later step of the hooks that passed; a refusal shows the other policies' entries, the refusing one last. */
  private async step(run: (hook: PolicyHook) => Promise<void> | undefined): Promise<void> {
    for (const hook of this.passed) {
      try {
        await run(hook);
      } catch (error) {
        if (error instanceof PolicyError) error.metadata.entries = [...this.entries(hook), error.entry];
        throw error;
      }
    }
  }
}

/** An entry of a payment collected for the answer: its receipt in (`charged`) or on its way (`pending`). */
function isCollected(entry: PolicyEntry): boolean {
  return entry.status === 'charged' || entry.status === 'pending';
}
