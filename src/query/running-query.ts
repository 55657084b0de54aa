import type { FastifyBaseLogger } from 'fastify';
import { generates, searches } from '../domain/endpoint-shape.ts';
import type { PolicyMetadata } from '../domain/policy-metadata.ts';
import type { EndpointRecord } from '../endpoints/codec.ts';
import { type ChatMessage, ModelError, ModelTimeoutError, sumUsage } from '../llm/provider.ts';
import type { HookSet } from '../policies/hook-set.ts';
import type { AnswerModel, ModelCall, ModelCallResult, PolicyContext, QueryOutcome } from '../policies/hooks.ts';
import { answerContext } from './answer-context.ts';
import { forConsumer } from './consumer-errors.ts';
import { chatOptions, type Generation, withSystemPrompt } from './generation.ts';
import { searchText, withContext } from './messages.ts';
import type { DatasetSearch, ModelRunner, References, Summary } from './ports.ts';
import type { QueryRecord } from './query-record.ts';
import type { QueryRequest } from './schemas.ts';

/** The query as it runs: what the policies see, and the endpoint and body behind it. */
export interface QueryContext extends PolicyContext {
  readonly endpoint: EndpointRecord;
  readonly body: QueryRequest;
  /** The body's generation fields with the endpoint's and the specification's defaults filled in. */
  readonly generation: Generation;
}

export interface RunningQueryDeps {
  search: DatasetSearch;
  models: ModelRunner;
  log: FastifyBaseLogger;
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

/**
 * One query past its pre-hooks: (c) search, (d) generate, (e) post-hooks and record, (f) answer. The
 * steps are written once (`run`); the two answer forms differ only in how the model is asked (whole or
 * streamed) and in what they make of the events. Whatever happens, `finish` runs the post-hooks exactly once.
 */
export class RunningQuery {
  private finished = false;
  /** Time spent generating (for the tokens/s metric). */
  private generationSeconds = 0;

  constructor(
    private readonly deps: RunningQueryDeps,
    readonly context: QueryContext,
    private readonly messages: ChatMessage[],
    private readonly hooks: HookSet,
    private readonly record: QueryRecord,
    /** Whether a marketplace consumer asked (not the owner): it is told less of a failure. */
    private readonly consumer: boolean,
  ) {}

  get endpoint(): EndpointRecord {
    return this.context.endpoint;
  }

  /** (b): the pre-hooks; a refusal ends the query here (post-hooks of those that passed, and its record). */
  async runPreHooks(): Promise<void> {
    try {
      await this.hooks.pre(this.context);
    } catch (error) {
      await this.finish(failedOutcome(undefined), error);
      throw error;
    }
  }

  /** Whether the answer must be held until it is rewritten and paid for (a filtered or paid query: see `settle`). */
  get holdsAnswer(): boolean {
    return this.hooks.holdsAnswer;
  }

  /** (c) to (f) in one go: the whole answer, with what today's SyftHub clients read beside it. */
  async answer(signal?: AbortSignal): Promise<QueryAnswer> {
    let references: References | undefined;
    for await (const event of this.run('whole', signal)) {
      if (event.type === 'references') references = event.references;
      if (event.type === 'done') {
        return {
          summary: event.summary,
          ...(references ? { references } : {}),
          policy_metadata: event.policyMetadata,
          cost: event.totalCost,
          currency: 'USD',
        };
      }
    }
    throw new Error('the query ended without its closing event');
  }

  /**
   * (c) to (f) as events, handed over once they may start leaving: references once, then the generation
   * as it happens, then the totals. A paid or filtered query (`holdsAnswer`) is made whole, filtered and its
   * payment collected, first: until then it can still end as a plain 402 or 502, the caller is never charged
   * for an answer it did not get, and nothing unfiltered leaves. Any other is handed over from its first event. A failure before the events are handed
   * over is thrown here (an ordinary HTTP error); one after it ends the iteration.
   */
  async stream(signal?: AbortSignal): Promise<Iterable<AnswerEvent> | AsyncIterable<AnswerEvent>> {
    const events = this.run('streamed', signal);
    if (this.holdsAnswer) {
      const all: AnswerEvent[] = [];
      for await (const event of events) all.push(event);
      return all;
    }
    const first = await events.next();
    return (async function* () {
      if (!first.done) yield first.value;
      yield* events;
    })();
  }

  /** The steps of a query, for both answer forms; `done` comes once the query is finished. */
  private async *run(form: 'whole' | 'streamed', signal?: AbortSignal): AsyncGenerator<AnswerEvent> {
    let references: References | undefined;
    let summary: Summary | null = null;
    try {
      references = await this.search(signal);
      if (references) yield { type: 'references', references: this.forResponse(references) };
      if (generates(this.endpoint) && this.endpoint.model_id) {
        const started = performance.now();
        // An answer a policy rewrites (a PII filter) is generated whole and rewritten before any of it is handed over.
        const rewritten = this.hooks.transformsAnswer;
        const prompt = await this.promptWith(this.endpoint.model_id, references);
        summary = yield* this.generate(rewritten ? 'whole' : form, this.endpoint.model_id, prompt, signal);
        if (rewritten) {
          summary = await this.transformAnswer(this.endpoint.model_id, summary, signal);
          if (form === 'streamed') yield* wholeAnswer(summary);
        }
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
      totalCost: (references?.cost ?? 0) + (summary?.cost ?? 0) + this.hooks.mppCharged(),
      policyMetadata: this.hooks.metadata(),
    };
  }

  /** (d): the whole summary at once, or its text as the model streams it (the summary assembled at its end). */
  private async *generate(
    form: 'whole' | 'streamed',
    modelId: string,
    messages: ChatMessage[],
    signal?: AbortSignal,
  ): AsyncGenerator<AnswerEvent, Summary> {
    const { tenant, body, generation } = this.context;
    const options = chatOptions(body, generation);
    if (form === 'whole') return this.deps.models.chat(tenant, modelId, messages, options, signal);
    let content = '';
    let start: { id: string; model: string } | undefined;
    for await (const event of this.deps.models.stream(tenant, modelId, messages, options, signal)) {
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

  /**
   * The answer as the policies that rewrite it leave it (hook-set.ts `transformAnswer`), their calls of the
   * endpoint's model counted as the query's own: in the summary's usage and cost, hence in the usage row and
   * in what an accounting policy confirms.
   */
  private async transformAnswer(modelId: string, summary: Summary, signal?: AbortSignal): Promise<Summary> {
    const calls: Summary[] = [];
    const model: AnswerModel = { call: (call, callSignal) => this.callModel(modelId, call, calls, callSignal) };
    const answer = { content: summary.message.content, tokens: summary.usage.completion_tokens };
    const content = await this.hooks.transformAnswer(this.context, answer, model, signal);
    const prompt = calls.reduce((sum, call) => sum + call.usage.prompt_tokens, summary.usage.prompt_tokens);
    const completion = calls.reduce((sum, call) => sum + call.usage.completion_tokens, summary.usage.completion_tokens);
    return {
      ...summary,
      message: { ...summary.message, content, tokens: completion },
      usage: sumUsage(prompt, completion),
      cost: calls.reduce((sum, call) => sum + call.cost, summary.cost),
    };
  }

  /** One call of the endpoint's model for a policy; its failure names what the call was for, and stays the model's. */
  private async callModel(modelId: string, call: ModelCall, calls: Summary[], signal?: AbortSignal): Promise<ModelCallResult> {
    const messages: ChatMessage[] = [
      { role: 'system', content: call.system },
      { role: 'user', content: call.user },
    ];
    const options = { max_tokens: call.maxTokens, temperature: 0, stop_sequences: [], presence_penalty: 0, frequency_penalty: 0 };
    let result: Summary;
    try {
      result = await this.deps.models.chat(this.context.tenant, modelId, messages, options, signal);
    } catch (error) {
      // Still a ModelError: a consumer reads the plain sentence (consumer-errors.ts), the owner which call failed.
      if (error instanceof ModelTimeoutError) throw new ModelTimeoutError(`${call.purpose}: ${error.message}`, { cause: error });
      if (error instanceof ModelError) throw new ModelError(`${call.purpose}: ${error.message}`, { cause: error });
      throw error;
    }
    calls.push(result);
    return {
      text: result.message.content,
      finishReason: result.finish_reason,
      promptTokens: result.usage.prompt_tokens,
      completionTokens: result.usage.completion_tokens,
      cost: result.cost,
    };
  }

  /** (c): the dataset searched with the last user message. */
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

  /**
   * The endpoint's system prompt, then the references with their neighbouring chunks as one system message
   * (answer-context.ts), then the caller's messages.
   */
  private async promptWith(modelId: string, references: References | undefined): Promise<ChatMessage[]> {
    const { tenant, generation } = this.context;
    const request = { tenant, datasetId: this.endpoint.dataset_id ?? '', modelId, messages: this.messages, generation };
    const context = await answerContext(this.deps, request, references);
    return withSystemPrompt(withContext(this.messages, context), generation.system_prompt);
  }

  /**
   * The answer is ready and nothing of it has left: the payments are collected now (hook-set.ts `settle`),
   * with the usage row the answer will write, for a process that stops before writing it.
   */
  private settle(references: References | undefined, summary: Summary | null): Promise<void> {
    const outcome = succeededOutcome(references, summary);
    return this.hooks.settle(this.context, { outcome, usage: this.record.usageRow(outcome, undefined) });
  }

  /**
   * (e): the post-hooks of every policy whose pre-hook passed, in order, then the record. A post-hook that
   * fails turns a succeeded query into a failed one (a policy may abort at (e)), except once an MPP payment
   * was collected: the caller paid for this answer, and an error now would make its client pay again for a
   * new one (API-CONTRACT 10.3), so the failure is only logged.
   */
  private async finish(outcome: QueryOutcome, failure?: unknown): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    const postFailures = await this.hooks.post(this.context, outcome);
    for (const error of postFailures) this.deps.log.error({ err: error, endpoint: this.endpoint.slug }, 'policy post-hook failed');
    const postFailure = postFailures[0];
    const paid = !failure && this.hooks.mppCharged() > 0;
    await this.record.write({
      outcome,
      failure,
      error: failure ?? (paid ? undefined : postFailure),
      paid,
      payment: this.hooks.collectedPayment(),
      settlementId: this.hooks.settlementId(),
      generationSeconds: this.generationSeconds,
    });
    if (!failure && postFailure && !paid) throw postFailure;
  }

  /**
   * A failure as the caller is told of it, once its usage row holds the whole reason: a marketplace
   * consumer does not read what only the owner should know (consumer-errors.ts).
   */
  private told(error: unknown): unknown {
    return this.consumer ? forConsumer(error) : error;
  }
}

/** A whole answer as the events of a stream: who answered, then its text at once. */
function* wholeAnswer(summary: Summary): Generator<AnswerEvent> {
  yield { type: 'start', id: summary.id, model: summary.model };
  yield { type: 'delta', text: summary.message.content };
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
