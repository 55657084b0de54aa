/**
 * dtype `openai`: any OpenAI-compatible chat server (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server)
 * through the `openai` client, which keeps streaming and the wire format right for us.
 *
 * Decisions:
 * - Timeouts: `timeout_ms` bounds a whole non-streamed answer, and, when streaming, the wait for the
 *   first chunk and every gap between chunks (a long answer that keeps flowing is not cut off).
 * - No retries (`maxRetries: 0`): a dead server fails at once instead of after backoffs that outlast
 *   the timeout; the caller decides whether to try again.
 * - A server that reports no usage gets counts of characters / 4, labelled `usage_estimated: true` in
 *   provider_info: an estimate keeps accounting close to the truth where 0 would give answers away.
 * - `max_tokens` is sent, as every compatible server understands it; OpenAI's newer models refuse it
 *   for `max_completion_tokens`, so one such refusal switches this provider over and retries.
 * - The API key lives in a private field and goes into a client made for each call; error messages are
 *   scrubbed of it (and of anything shaped like a key) before they leave this file.
 */

import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { errorMessage } from '../domain/errors.ts';
import { outboundCause } from '../outbound/errors.ts';
import { messageOf, shortMessage } from '../outbound/upstream.ts';
import { redactSecrets } from '../security/redact.ts';
import { abortReason } from '../util/abort.ts';
import { estimateTokens } from './costs.ts';
import type { OpenAIConfiguration } from './model-config.ts';
import {
  type ChatMessage,
  type ChatOptions,
  type ChatProvider,
  type ChatSummary,
  ModelError,
  ModelTimeoutError,
  newCompletionId,
  type ProviderHealth,
  type ProviderInfo,
  type StreamEvent,
  sumUsage,
  type Usage,
} from './provider.ts';

export interface OpenAIProviderDeps {
  /**
   * The outbound module's fetch for the model's tenant (outbound/fetch.ts: addresses checked, answers
   * bounded); the global fetch only where no tenant is involved (unit tests of the provider itself).
   */
  fetch?: typeof fetch;
}

/** The base URL as messages show it: credentials in its user-info part are dropped. */
function displayUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  } catch {
    return baseUrl;
  }
}

/**
 * The caller's signal combined with our own timer. `reset` restarts the timer (each streamed chunk),
 * `pause` stops it while the consumer of a stream has not asked for more.
 */
class Deadline {
  private readonly timer = new AbortController();
  private handle: ReturnType<typeof setTimeout> | undefined;
  readonly signal: AbortSignal;

  constructor(
    private readonly ms: number,
    caller: AbortSignal | undefined,
  ) {
    this.signal = caller ? AbortSignal.any([caller, this.timer.signal]) : this.timer.signal;
    this.reset();
  }

  get expired(): boolean {
    return this.timer.signal.aborted;
  }

  reset(): void {
    this.pause();
    this.handle = setTimeout(() => this.timer.abort(), this.ms);
  }

  pause(): void {
    if (this.handle !== undefined) clearTimeout(this.handle);
    this.handle = undefined;
  }
}

export class OpenAIChatProvider implements ChatProvider {
  readonly #apiKey: string | undefined;
  private readonly model: string;
  private readonly baseUrl: string;
  private readonly systemPrompt: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch | undefined;
  /** Learnt from a server that refuses `max_tokens` (OpenAI's reasoning models). */
  private useMaxCompletionTokens = false;

  /** `configuration` with its defaults applied (model-config.ts); an empty key or prompt is none. */
  constructor(configuration: OpenAIConfiguration, deps: OpenAIProviderDeps = {}) {
    this.#apiKey = configuration.api_key || undefined;
    this.model = configuration.model;
    this.baseUrl = configuration.base_url;
    this.systemPrompt = configuration.system_prompt || undefined;
    this.timeoutMs = configuration.timeout_ms;
    this.fetchImpl = deps.fetch;
  }

  async chat(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): Promise<ChatSummary> {
    signal?.throwIfAborted();
    const started = performance.now();
    const deadline = new Deadline(this.timeoutMs, signal);
    const client = this.client();
    try {
      const completion = await this.withTokenParameter(options, (params) =>
        client.chat.completions.create(
          { ...this.requestBody(messages, options, params), stream: false },
          { signal: deadline.signal, timeout: this.timeoutMs, maxRetries: 0 },
        ),
      );
      const choice = completion.choices[0];
      const content = choice?.message?.content ?? '';
      const { usage, estimated } = this.usageOf(completion.usage, messages, content);
      return {
        id: completion.id || newCompletionId(),
        model: completion.model || this.model,
        message: { role: 'assistant', content, tokens: usage.completion_tokens },
        finish_reason: choice?.finish_reason ?? 'stop',
        usage,
        provider_info: this.providerInfo(started, estimated, completion.system_fingerprint),
      };
    } catch (error) {
      throw this.failure(error, deadline, signal);
    } finally {
      deadline.pause();
    }
  }

  async *stream(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
    signal?.throwIfAborted();
    const started = performance.now();
    const deadline = new Deadline(this.timeoutMs, signal);
    const client = this.client();
    let chunks: AsyncIterable<ChatCompletionChunk> & { controller: AbortController };
    try {
      chunks = await this.withTokenParameter(options, (params) =>
        client.chat.completions.create(
          {
            ...this.requestBody(messages, options, params),
            stream: true,
            stream_options: { include_usage: true },
          },
          { signal: deadline.signal, timeout: this.timeoutMs, maxRetries: 0 },
        ),
      );
    } catch (error) {
      deadline.pause();
      throw this.failure(error, deadline, signal);
    }

    let id = '';
    let model = '';
    let content = '';
    let finishReason: string | undefined;
    let reported: OpenAI.CompletionUsage | undefined;
    let fingerprint: string | undefined | null;
    try {
      deadline.reset();
      for await (const chunk of chunks) {
        id ||= chunk.id;
        model ||= chunk.model;
        fingerprint ??= chunk.system_fingerprint;
        if (chunk.usage) reported = chunk.usage;
        const choice = chunk.choices[0];
        if (choice?.finish_reason) finishReason = choice.finish_reason;
        const text = choice?.delta?.content;
        if (text) {
          content += text;
          // The consumer's pace is not the server's silence: no timer while we wait for it.
          deadline.pause();
          yield { type: 'delta', text };
        }
        deadline.reset();
      }
      // The client ends the iteration quietly when its request is aborted: say why it ended.
      if (signal?.aborted || deadline.expired) throw new Error('stream aborted');
    } catch (error) {
      throw this.failure(error, deadline, signal);
    } finally {
      deadline.pause();
      // Stops the HTTP response when the consumer leaves early; harmless once it has ended.
      chunks.controller.abort();
    }

    const { usage, estimated } = this.usageOf(reported, messages, content);
    yield {
      type: 'done',
      id: id || newCompletionId(),
      model: model || this.model,
      finish_reason: finishReason ?? 'stop',
      usage,
      provider_info: this.providerInfo(started, estimated, fingerprint),
    };
  }

  async health(signal?: AbortSignal): Promise<ProviderHealth> {
    const deadline = new Deadline(this.timeoutMs, signal);
    try {
      const page = await this.client().models.list({ signal: deadline.signal, timeout: this.timeoutMs, maxRetries: 0 });
      const listed = page.data.some((entry) => entry.id === this.model);
      return {
        healthy: true,
        message: listed
          ? `Model '${this.model}' is available at ${displayUrl(this.baseUrl)}`
          : `The server at ${displayUrl(this.baseUrl)} answers but does not list model '${this.model}'`,
      };
    } catch (error) {
      // Some compatible servers have no model list; answering at all means they are up.
      if (error instanceof APIError && error.status === 404) {
        return { healthy: true, message: `The server at ${displayUrl(this.baseUrl)} answers (it has no model list)` };
      }
      const failure = this.failure(error, deadline, signal);
      return { healthy: false, message: failure instanceof Error ? failure.message : 'aborted' };
    } finally {
      deadline.pause();
    }
  }

  private client(): OpenAI {
    // Every option is explicit: the client would otherwise read OPENAI_* variables of this process and
    // send the operator's own key to whatever base_url a tenant configured.
    return new OpenAI({
      apiKey: this.#apiKey ?? 'unused',
      baseURL: this.baseUrl,
      organization: null,
      project: null,
      webhookSecret: null,
      adminAPIKey: null,
      // Without a key, send no Authorization header at all (Ollama and friends need none).
      defaultHeaders: this.#apiKey ? undefined : { Authorization: null },
      maxRetries: 0,
      timeout: this.timeoutMs,
      ...(this.fetchImpl ? { fetch: this.fetchImpl } : {}),
    });
  }

  private requestBody(
    messages: ChatMessage[],
    options: ChatOptions,
    tokenParameter: { max_tokens: number } | { max_completion_tokens: number },
  ): ChatCompletionCreateParamsBase {
    const all: ChatCompletionMessageParam[] = [];
    if (this.systemPrompt) all.push({ role: 'system', content: this.systemPrompt });
    for (const message of messages) all.push({ role: message.role, content: message.content });
    const stop = options.stop_sequences.filter((sequence) => sequence !== '');
    return {
      model: this.model,
      messages: all,
      ...tokenParameter,
      temperature: options.temperature,
      presence_penalty: options.presence_penalty,
      frequency_penalty: options.frequency_penalty,
      // Some servers refuse an empty list where they accept no field.
      ...(stop.length > 0 ? { stop } : {}),
      ...(options.top_p !== undefined ? { top_p: options.top_p } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(options.response_format !== undefined ? { response_format: options.response_format } : {}),
    };
  }

  private async withTokenParameter<T>(
    options: ChatOptions,
    send: (tokenParameter: { max_tokens: number } | { max_completion_tokens: number }) => Promise<T>,
  ): Promise<T> {
    if (this.useMaxCompletionTokens) return send({ max_completion_tokens: options.max_tokens });
    try {
      return await send({ max_tokens: options.max_tokens });
    } catch (error) {
      if (error instanceof APIError && error.status === 400 && /max_completion_tokens/.test(error.message)) {
        this.useMaxCompletionTokens = true;
        return send({ max_completion_tokens: options.max_tokens });
      }
      throw error;
    }
  }

  private usageOf(
    reported: OpenAI.CompletionUsage | null | undefined,
    messages: ChatMessage[],
    content: string,
  ): { usage: Usage; estimated: boolean } {
    if (reported && Number.isFinite(reported.prompt_tokens) && Number.isFinite(reported.completion_tokens)) {
      return { usage: sumUsage(reported.prompt_tokens, reported.completion_tokens), estimated: false };
    }
    const prompt = (this.systemPrompt ?? '') + messages.map((message) => message.content).join('');
    return { usage: sumUsage(estimateTokens(prompt.length), estimateTokens(content.length)), estimated: true };
  }

  private providerInfo(started: number, estimated: boolean, fingerprint: string | null | undefined): ProviderInfo {
    return {
      provider: 'openai',
      response_time_ms: Math.round(performance.now() - started),
      ...(fingerprint ? { system_fingerprint: fingerprint } : {}),
      ...(estimated ? { usage_estimated: true } : {}),
    };
  }

  /** What to throw for an error of the client: the caller's abort as is, everything else as ModelError. */
  private failure(error: unknown, deadline: Deadline, signal: AbortSignal | undefined): unknown {
    if (signal?.aborted) return abortReason(signal);
    const where = `Model '${this.model}' at ${displayUrl(this.baseUrl)}`;
    if (deadline.expired || error instanceof APIConnectionTimeoutError) {
      return new ModelTimeoutError(`${where} did not answer within ${this.timeoutMs} ms`);
    }
    if (error instanceof ModelError) return error;
    // knode refused the address, or stopped reading an answer too large: say so, not "could not connect".
    const outbound = outboundCause(error);
    if (outbound) return new ModelError(`${where} failed: ${outbound.detail}`, { cause: outbound });
    // The status and the short message of a JSON error, never the body: it may be anything the URL pointed at.
    if (error instanceof APIError && error.status !== undefined) {
      const message = shortMessage(messageOf({ error: error.error }), [this.#apiKey]);
      return new ModelError(`${where} failed: ${error.status}${message ? ` ${message}` : ''}`);
    }
    if (error instanceof APIConnectionError) {
      const cause = error.cause instanceof Error ? error.cause : undefined;
      const code = cause && 'code' in cause && typeof cause.code === 'string' ? ` (${cause.code})` : '';
      return new ModelError(`${where} failed: could not connect${code}`);
    }
    const message = shortMessage(errorMessage(error), [this.#apiKey]);
    return new ModelError(`${where} failed: ${redactSecrets(message, [this.#apiKey])}`);
  }
}
