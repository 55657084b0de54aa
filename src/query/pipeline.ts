import type { FastifyBaseLogger } from 'fastify';
import type { Static } from 'typebox';
import { now } from '../db/database.ts';
import type { FixedWindows } from '../db/fixed-windows.ts';
import { generates, searches } from '../domain/endpoint-shape.ts';
import { errorMessage, ForbiddenError, NotFoundError, PolicyError } from '../domain/errors.ts';
import type { PolicyEntry, PolicyMetadata } from '../domain/policy-metadata.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRecord } from '../endpoints/codec.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import { estimateTokens } from '../llm/costs.ts';
import type { ChatMessage, ChatOptions } from '../llm/provider.ts';
import type { MppGateway } from '../payments/mpp.ts';
import { AccessHook } from '../policies/access.ts';
import { AccountingHook } from '../policies/accounting.ts';
import type { PolicyOfType } from '../policies/codec.ts';
import type { GeneralLimits } from '../policies/general-limits.ts';
import { inPolicyOrder, type PolicyContext, type PolicyHook, type QueryOutcome } from '../policies/hooks.ts';
import { MppHook } from '../policies/mpp.ts';
import { RateLimitHook } from '../policies/rate-limit.ts';
import type { PolicyRepository } from '../policies/repository.ts';
import type { AccountingService } from '../syfthub/accounting.ts';
import { forConsumer } from './consumer-errors.ts';
import { type Generation, generationFor, withSystemPrompt } from './generation.ts';
import { PROMPT_TOKEN_MARGIN, searchText, toMessages, withReferences } from './messages.ts';
import type { DatasetSearch, ModelRunner, PricedStreamEvent, References, Summary } from './ports.ts';
import type { QueryBody } from './schemas.ts';
import type { UsageRepository } from './usage-repository.ts';

export type QueryRequest = Static<typeof QueryBody>;

/** Who asks: the endpoint's owner (local JWT or admin key) or a marketplace user (satellite token). */
/** The query as the pipeline carries it: what the policies see, and the endpoint and body behind it. */
interface QueryContext extends PolicyContext {
  readonly endpoint: EndpointRecord;
  readonly body: Static<typeof QueryBody>;
  /** The body's generation fields with the endpoint's and the specification's defaults filled in. */
  readonly generation: Generation;
}

export interface QueryCaller {
  kind: 'owner' | 'satellite';
  senderEmail: string;
  tenant: Tenant;
  clientIp: string;
  /** `playground`: the owner asks from the console (query/routes.ts trusts it only from the owner). */
  origin: 'api' | 'playground';
}

/** Where finished queries are counted besides the usage table (metrics/metrics.ts implements it). */
export interface QueryObserver {
  queryFinished(endpoint: string, outcome: string, seconds: number): void;
  policyRefused(policyType: string, outcome: string): void;
  tokensGenerated(tokens: number, seconds: number): void;
}

export interface QueryPipelineDeps {
  limits: GeneralLimits;
  endpoints: EndpointRepository;
  policies: PolicyRepository;
  usage: UsageRepository;
  windows: FixedWindows;
  search: DatasetSearch;
  models: ModelRunner;
  /** The accounting service that settles a tenant's paid queries (marketplaces/service.ts implements it). */
  accounting: { accountingFor(tenant: Tenant): Promise<AccountingService | undefined> };
  /** MPP payments: the tenant's wallet, challenges, credentials and their broadcast (payments/mpp.ts). */
  payments: Pick<MppGateway, 'wallet' | 'challenge' | 'accept'>;
  observer?: QueryObserver;
  log: FastifyBaseLogger;
}

/**
 * The query pipeline of the specification (Endpoint management rule 7): (a) the caller's credentials
 * were verified by the route; `begin` finds the endpoint and runs the pre-hooks (b); the returned query
 * then searches (c), generates (d), runs the post-hooks (e) and answers (f), whole or as a stream.
 */
export class QueryPipeline {
  constructor(private readonly deps: QueryPipelineDeps) {}

  /** `payment` is the `X-Payment` header: an MPP credential for an endpoint with an `mpp` policy. */
  async begin(caller: QueryCaller, slug: string, body: QueryRequest, payment?: string): Promise<RunningQuery> {
    const arrived = performance.now();
    const endpoint = await this.deps.endpoints.getBySlug(caller.tenant.id, slug.toLowerCase());
    if (!endpoint) throw new NotFoundError(`Endpoint '${slug}' not found`);
    if (caller.kind === 'satellite' && !endpoint.published) throw new ForbiddenError('Endpoint is not published');

    const policies = inPolicyOrder(await this.deps.policies.list(caller.tenant.id, endpoint.id));
    const rateLimits = policies.filter((policy): policy is PolicyOfType<'rate_limit'> => policy.policy_type === 'rate_limit');
    const prices = policies.filter((policy): policy is PolicyOfType<'mpp'> => policy.policy_type === 'mpp');
    // An endpoint without rate_limit policies is governed by the general limits, per caller and endpoint.
    if (rateLimits.length === 0) await this.deps.limits.checkQuery(endpoint.id, caller.senderEmail || caller.clientIp);

    const hooks: PolicyHook[] = [];
    for (const policy of policies) {
      if (policy.policy_type === 'access') {
        hooks.push(new AccessHook(policy.configuration));
      } else if (policy.policy_type === 'rate_limit') {
        // All rate limits are one hook: they are checked and counted together.
        if (policy === rateLimits[0]) hooks.push(new RateLimitHook(this.deps.windows, rateLimits));
      } else if (policy.policy_type === 'mpp') {
        // All prices are one hook too: the caller's tier is the first that applies to it.
        if (policy === prices[0]) hooks.push(new MppHook(prices, this.deps.payments));
      } else {
        hooks.push(new AccountingHook(policy.configuration, await this.deps.accounting.accountingFor(caller.tenant)));
      }
    }

    const messages = toMessages(body.messages);
    const generation = generationFor(body, endpoint.generation_defaults);
    const context: QueryContext = {
      tenant: caller.tenant,
      endpoint,
      senderEmail: caller.senderEmail,
      transactionToken: body.transaction_token,
      body,
      generation,
      maxCost: await this.maxCost(caller.tenant, endpoint, messages, body.limit, generation),
      paymentCredential: payment,
      generates: generates(endpoint),
    };
    const query = new RunningQuery(this.deps, context, messages, {
      arrived,
      origin: caller.origin,
      consumer: caller.kind === 'satellite',
    });
    await query.runPreHooks(hooks);
    return query;
  }

  private async maxCost(
    tenant: Tenant,
    endpoint: EndpointRecord,
    messages: ChatMessage[],
    limit: number,
    generation: Generation,
  ): Promise<number> {
    let cost = 0;
    let referenceCharacters = 0;
    if (searches(endpoint) && endpoint.dataset_id) {
      const pricing = await this.deps.search.pricing(tenant, endpoint.dataset_id);
      cost += pricing.costPerQuery;
      referenceCharacters = limit * (pricing.chunkSize + 64);
    }
    if (generates(endpoint) && endpoint.model_id) {
      const promptCharacters = messages.reduce((sum, message) => sum + message.content.length, 0) + (generation.system_prompt?.length ?? 0);
      const promptTokens = estimateTokens(promptCharacters + referenceCharacters) + PROMPT_TOKEN_MARGIN;
      cost += await this.deps.models.maxCost(tenant, endpoint.model_id, promptTokens, generation.max_tokens);
    }
    return cost;
  }
}

/** Text deltas and the closing facts of a streamed answer, as the SSE writer needs them. */
export type AnswerEvent =
  | { type: 'references'; references: References }
  | { type: 'start'; id: string; model: string }
  | { type: 'delta'; text: string }
  | { type: 'done'; summary: Summary | null; totalCost: number; policyMetadata: PolicyMetadata };

/** A whole answer: the specification's parts, and what today's SyftHub clients read beside them (API-CONTRACT 10). */
export interface QueryAnswer {
  summary: Summary | null;
  references?: References;
  policy_metadata: PolicyMetadata;
  cost: number;
  currency: 'USD';
}

/** One query past its pre-hooks. Whatever happens next, `finish` runs the post-hooks exactly once. */
export class RunningQuery {
  private hooksPassed: PolicyHook[] = [];
  private finished = false;

  /** Time spent generating (for the tokens/s metric). */
  private generationSeconds = 0;

  constructor(
    private readonly deps: QueryPipelineDeps,
    readonly context: QueryContext,
    private readonly messages: ChatMessage[],
    /** When the query arrived, where from, and whether a marketplace consumer asked it (not the owner). */
    private readonly timing: { readonly arrived: number; readonly origin: 'api' | 'playground'; readonly consumer: boolean },
  ) {}

  get endpoint(): EndpointRecord {
    return this.context.endpoint;
  }

  async runPreHooks(hooks: PolicyHook[]): Promise<void> {
    for (const hook of hooks) {
      try {
        await hook.pre(this.context);
      } catch (error) {
        // The refusal's answer shows what the policies that ran before it did, the refusing one last.
        if (error instanceof PolicyError) error.metadata.entries = [...this.entries(), error.entry];
        await this.finish(failedOutcome(undefined), error);
        throw error;
      }
      this.hooksPassed.push(hook);
    }
  }

  /** Whether the answer must be held until the payment is collected (a paid query: see `settle`). */
  get holdsAnswer(): boolean {
    return this.hooksPassed.some((hook) => hook.holdsAnswer?.() ?? false);
  }

  /** The answer's `policy_metadata` once the query is over (API-CONTRACT 10.2). */
  policyMetadata(): PolicyMetadata {
    return { outcome: 'success', entries: this.entries() };
  }

  private entries(except?: PolicyHook): PolicyEntry[] {
    return this.hooksPassed.filter((hook) => hook !== except).map((hook) => hook.entry());
  }

  /** What the query was charged through MPP, in USD (its receipt in, or pending): paid on top of the costs it declares. */
  private charged(): number {
    return this.entries()
      .filter((entry) => isPayment(entry) && entry.transaction?.rail === 'mpp')
      .reduce((sum, entry) => sum + (entry.amount ?? 0), 0);
  }

  /** What the caller pays for the answer: the search's and the model's declared costs, and any MPP charge. */
  private totalCost(references: References | undefined, summary: Summary | null): number {
    return (references?.cost ?? 0) + (summary?.cost ?? 0) + this.charged();
  }

  /**
   * Runs one later step of the hooks that passed (after the search, or settling once the answer is ready);
   * a refusal shows the other policies' entries, the refusing one last.
   */
  private async step(run: (hook: PolicyHook) => Promise<void> | undefined): Promise<void> {
    for (const hook of this.hooksPassed) {
      try {
        await run(hook);
      } catch (error) {
        if (error instanceof PolicyError) error.metadata.entries = [...this.entries(hook), error.entry];
        throw error;
      }
    }
  }

  /** After the search: a price per document becomes an amount to pay (or a 402). */
  private afterSearch(references: References | undefined): Promise<void> {
    const found = { documents: references?.documents.length ?? 0 };
    return this.step((hook) => hook.afterSearch?.(this.context, found));
  }

  /**
   * The answer is ready and nothing of it has left: the payments are collected now (an MPP transaction is
   * broadcast and confirmed). Before this, a failure costs the caller nothing; after it, nothing may fail.
   * The usage row the answer will write goes with it, for a process that stops before writing it.
   */
  private settle(references: References | undefined, summary: Summary | null): Promise<void> {
    const outcome = succeededOutcome(references, summary);
    const answered = { outcome, usage: this.usageRow(outcome, undefined) };
    return this.step((hook) => hook.settle?.(this.context, answered));
  }

  /** (c) to (f) in one go: the whole answer, with what today's SyftHub clients read beside it. */
  async answer(signal?: AbortSignal): Promise<QueryAnswer> {
    let references: References | undefined;
    let summary: Summary | null = null;
    try {
      references = await this.search(signal);
      await this.afterSearch(references);
      if (generates(this.endpoint) && this.endpoint.model_id) {
        const started = performance.now();
        summary = await this.deps.models.chat(
          this.context.tenant,
          this.endpoint.model_id,
          this.promptWith(references),
          this.chatOptions(),
          signal,
        );
        this.generationSeconds = (performance.now() - started) / 1000;
      }
      await this.settle(references, summary);
    } catch (error) {
      await this.finish(failedOutcome(references), error);
      throw this.told(error);
    }
    await this.finish(succeededOutcome(references, summary));
    return {
      summary,
      ...(references ? { references: this.forResponse(references) } : {}),
      policy_metadata: this.policyMetadata(),
      cost: this.totalCost(references, summary),
      currency: 'USD',
    };
  }

  /**
   * (c) to (f) as events: references once, then the generation as it happens, then the totals. A paid
   * query (`holdsAnswer`) settles its payment before the last event: its caller must hold every event
   * until then (query/routes.ts does), so that no part of an unpaid answer leaves.
   */
  async *stream(signal?: AbortSignal): AsyncGenerator<AnswerEvent> {
    let references: References | undefined;
    let summary: Summary | null = null;
    try {
      references = await this.search(signal);
      await this.afterSearch(references);
      if (references) yield { type: 'references', references: this.forResponse(references) };
      if (generates(this.endpoint) && this.endpoint.model_id) {
        const started = performance.now();
        summary = yield* this.generateStream(this.endpoint.model_id, this.promptWith(references), signal);
        this.generationSeconds = (performance.now() - started) / 1000;
      }
      await this.settle(references, summary);
    } catch (error) {
      await this.finish(failedOutcome(references), error);
      throw this.told(error);
    }
    await this.finish(succeededOutcome(references, summary));
    yield {
      type: 'done',
      summary,
      totalCost: this.totalCost(references, summary),
      policyMetadata: this.policyMetadata(),
    };
  }

  private async *generateStream(modelId: string, messages: ChatMessage[], signal?: AbortSignal): AsyncGenerator<AnswerEvent, Summary> {
    let content = '';
    let start: { id: string; model: string } | undefined;
    const events: AsyncIterable<PricedStreamEvent> = this.deps.models.stream(
      this.context.tenant,
      modelId,
      messages,
      this.chatOptions(),
      signal,
    );
    for await (const event of events) {
      if (event.type === 'start') {
        start = { id: event.id, model: event.model };
        yield event;
      } else if (event.type === 'delta') {
        content += event.text;
        yield event;
      } else {
        return {
          id: start?.id ?? event.id,
          model: event.model,
          message: { role: 'assistant', content, tokens: event.usage.completion_tokens },
          finish_reason: event.finish_reason,
          usage: event.usage,
          cost: event.cost,
          provider_info: event.provider_info,
        };
      }
    }
    throw new Error('the model stream ended without its closing event');
  }

  private async search(signal?: AbortSignal): Promise<References | undefined> {
    if (!searches(this.endpoint) || !this.endpoint.dataset_id) return undefined;
    const body = this.context.body;
    // Metadata is always fetched: the context block names each document's source; the response drops it if asked.
    return this.deps.search.search(
      this.context.tenant,
      this.endpoint.dataset_id,
      searchText(this.messages),
      {
        similarityThreshold: body.similarity_threshold,
        limit: body.limit,
        includeMetadata: true,
        mode: body.extras.reference_options?.mode ?? 'hybrid',
      },
      signal,
    );
  }

  private forResponse(references: References): References {
    if (this.context.body.include_metadata) return references;
    return { ...references, documents: references.documents.map((document) => ({ ...document, metadata: {} })) };
  }

  /** The endpoint's system prompt, then the references as one system message, then the caller's messages. */
  private promptWith(references: References | undefined): ChatMessage[] {
    return withSystemPrompt(withReferences(this.messages, references), this.context.generation.system_prompt);
  }

  private chatOptions(): ChatOptions {
    const body = this.context.body;
    const { max_tokens, temperature, stop_sequences } = this.context.generation;
    const extra = body.extras.summarize_options ?? {};
    return {
      max_tokens,
      temperature,
      stop_sequences,
      presence_penalty: body.presence_penalty,
      frequency_penalty: body.frequency_penalty,
      ...(extra.top_p !== undefined ? { top_p: extra.top_p } : {}),
      ...(extra.seed !== undefined ? { seed: extra.seed } : {}),
      ...(extra.response_format !== undefined ? { response_format: extra.response_format as ChatOptions['response_format'] } : {}),
    };
  }

  /**
   * (e): the post-hooks of every policy whose pre-hook passed, in order, then the usage record.
   * A post-hook that fails turns a succeeded query into a failed one (a policy may abort at (e)), except
   * once an MPP payment was collected: the caller paid for this answer, and an error now would make its
   * client pay again for a new one (API-CONTRACT 10.3), so the failure is only logged.
   */
  async finish(outcome: QueryOutcome, failure?: unknown): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    let postFailure: unknown;
    for (const hook of this.hooksPassed) {
      try {
        await hook.post(this.context, outcome);
      } catch (error) {
        this.deps.log.error({ err: error, endpoint: this.endpoint.slug }, 'policy post-hook failed');
        postFailure ??= error;
      }
    }
    const paid = !failure && this.charged() > 0;
    const error = failure ?? (paid ? undefined : postFailure);
    this.observe(outcome, error);
    if (recorded(failure)) {
      const payment = this.entries().find((entry) => entry.kind === 'payment' && isPayment(entry) && entry.transaction);
      const settlement = this.hooksPassed.map((hook) => hook.settlementId?.()).find((id) => id !== undefined);
      const row = {
        ...this.usageRow(outcome, error),
        payment_rail: payment?.transaction?.rail ?? null,
        payment_amount: payment?.amount ?? null,
        payment_transaction: payment?.transaction?.id ?? null,
      };
      try {
        // A paid answer's row is written once: here, or by the reconciler if this process stops first.
        if (settlement) await this.deps.usage.recordOnce(row, settlement);
        else await this.deps.usage.record(row);
      } catch (error) {
        if (!paid) throw error;
        this.deps.log.error({ err: error, endpoint: this.endpoint.slug }, 'the usage of a paid query could not be recorded');
      }
    }
    if (!failure && postFailure && !paid) throw postFailure;
  }

  /**
   * A failure as the caller is told of it, once its usage row holds the whole reason: a marketplace
   * consumer does not read what only the owner should know (consumer-errors.ts).
   */
  private told(error: unknown): unknown {
    return this.timing.consumer ? forConsumer(error) : error;
  }

  /** The usage row of this query as it ended (the payment columns are the caller's). */
  private usageRow(outcome: QueryOutcome, error: unknown) {
    return {
      tenant_id: this.context.tenant.id,
      endpoint_id: this.endpoint.id,
      sender_email: this.context.senderEmail,
      dataset_cost: outcome.datasetCost,
      model_cost: outcome.modelCost,
      total_cost: outcome.datasetCost + outcome.modelCost,
      tokens: outcome.tokens,
      status: error ? (error instanceof PolicyError ? ('refused' as const) : ('error' as const)) : ('success' as const),
      // A refusal's reason, not the 402's fixed detail.
      error: error ? (error instanceof PolicyError ? error.err : errorMessage(error)) : null,
      latency_ms: Math.round(performance.now() - this.timing.arrived),
      prompt_tokens: outcome.promptTokens ?? null,
      completion_tokens: outcome.completionTokens ?? null,
      origin: this.timing.origin,
      refused_by: error instanceof PolicyError ? error.entry.policy_type : null,
      created_at: now(),
    };
  }

  /** The query's duration and outcome, a refusal's policy, and the tokens generated, for the metrics. */
  private observe(outcome: QueryOutcome, error: unknown): void {
    const observer = this.deps.observer;
    if (!observer) return;
    const refusal = error instanceof PolicyError ? error : undefined;
    const result = refusal ? refusal.metadata.outcome : error ? 'error' : 'success';
    observer.queryFinished(`${this.context.tenant.name}/${this.endpoint.slug}`, result, (performance.now() - this.timing.arrived) / 1000);
    if (refusal) observer.policyRefused(refusal.entry.policy_type, refusal.metadata.outcome);
    if (outcome.completionTokens) observer.tokensGenerated(outcome.completionTokens, this.generationSeconds);
  }
}

/**
 * Whether a query's end is written to the usage: every one, refusals included, but those the refusing
 * policy keeps out (a 402 that only hands out a challenge: its paid retry is the query).
 */
function recorded(failure: unknown): boolean {
  return !(failure instanceof PolicyError) || failure.recorded;
}

/** An entry of a payment collected for the answer: its receipt in (`charged`) or on its way (`pending`). */
function isPayment(entry: PolicyEntry): boolean {
  return entry.status === 'charged' || entry.status === 'pending';
}

function succeededOutcome(references: References | undefined, summary: Summary | null): QueryOutcome {
  return {
    succeeded: true,
    datasetCost: references?.cost ?? 0,
    modelCost: summary?.cost ?? 0,
    tokens: summary?.usage.total_tokens ?? 0,
    ...(summary ? { promptTokens: summary.usage.prompt_tokens, completionTokens: summary.usage.completion_tokens } : {}),
  };
}

function failedOutcome(references: References | undefined): QueryOutcome {
  return { succeeded: false, datasetCost: references?.cost ?? 0, modelCost: 0, tokens: 0 };
}
