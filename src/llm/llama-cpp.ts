/**
 * dtype `llama_cpp`: local GGUF models through node-llama-cpp.
 *
 * - node-llama-cpp is imported on first use (`await import`), so the server starts without it; the
 *   compiled binary imports it from the `vendor/` folder beside itself (runtime/vendor.ts), and tests
 *   may pass their own (LocalModelRegistryOptions.loadModule).
 * - LocalModelRegistry keeps one loaded model per file and hands out a CPU slot per generation:
 *   each generation already uses every core (`threads` defaults to the core count), so running two at
 *   once would only make both slower; requests wait in FIFO order instead (default: one slot for all
 *   local models). Models unused for `idleUnloadMs` (default 10 minutes) are unloaded.
 * - The chat template comes from the GGUF (LlamaChat's "auto" wrapper reads tokenizer.chat_template).
 * - Messages are stateless per request: the caller's history is rendered every time; LlamaChat reuses
 *   the evaluated prefix it shares with the previous request.
 * - Usage counts tokens with the model's tokenizer: the prompt as the template renders it, and every
 *   generated token (thought segments included, as they were paid for in time).
 * - OpenAI's penalties map to llama.cpp's additive presence/frequency penalties; with both at 0 no
 *   repetition penalty is applied (node-llama-cpp would otherwise apply its own 1.1 by default).
 * - gpu_layers is accepted and kept, but only CPU binaries ship, so layers always run on the CPU.
 */

import { realpathSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type {
  ChatHistoryItem,
  GbnfJsonObjectSchema,
  LLamaChatGenerateResponseOptions,
  Llama,
  LlamaChat,
  LlamaContext,
  LlamaGrammar,
  LlamaModel,
} from 'node-llama-cpp';
import { errorMessage } from '../domain/errors.ts';
import { importNodeLlamaCpp, type NodeLlamaCppModule } from '../runtime/vendor.ts';
import { ggufFileProblem, type LlamaCppModelConfig } from './model-config.ts';
import {
  abortReason,
  type ChatMessage,
  type ChatOptions,
  type ChatProvider,
  type ChatSummary,
  doneEvent,
  type FinishReason,
  ModelError,
  newCompletionId,
  type ProviderHealth,
  type ResponseFormat,
  type StreamEvent,
  sumUsage,
} from './provider.ts';

export type { NodeLlamaCppModule };

export const DEFAULT_IDLE_UNLOAD_MS = 10 * 60 * 1000;
/** Context window when none is configured: "auto" could size it to a model's 128k training context. */
export const DEFAULT_MAX_CONTEXT_SIZE = 4096;

/** A FIFO counting semaphore whose waiters can give up (their request was aborted). */
class Slots {
  private free: number;
  private readonly waiting: { grant: () => void; signal?: AbortSignal; onAbort: () => void }[] = [];

  constructor(count: number) {
    this.free = count;
  }

  get queued(): number {
    return this.waiting.length;
  }

  acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) {
        next.signal?.removeEventListener('abort', next.onAbort);
        next.grant();
      } else {
        this.free++;
      }
    };
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(release);
    }
    return new Promise((resolvePromise, reject) => {
      const waiter = {
        grant: () => resolvePromise(release),
        signal,
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(abortReason(signal as AbortSignal));
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }
}

/** What a generation runs with while it holds its slot. */
export interface LoadedLocalModel {
  module: NodeLlamaCppModule;
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  chat: LlamaChat;
}

interface ContextEntry {
  context: LlamaContext;
  chat: LlamaChat;
}

interface ModelEntry {
  key: string;
  path: string;
  ready: Promise<LlamaModel>;
  contexts: Map<string, Promise<ContextEntry>>;
  active: number;
  idleTimer?: ReturnType<typeof setTimeout>;
}

export interface LocalModelRegistryOptions {
  /** Unload a model after this long without use (ms). Default 10 minutes. */
  idleUnloadMs?: number;
  /** Generations running at once across all local models. Default 1 (each already uses every core). */
  maxConcurrentGenerations?: number;
  /** How node-llama-cpp is imported. Default: from node_modules, or from vendor/ beside the binary. */
  loadModule?: () => Promise<NodeLlamaCppModule>;
}

/** Loaded local models, shared by every provider of the process; `dispose()` at shutdown. */
export class LocalModelRegistry {
  private readonly idleUnloadMs: number;
  private readonly slots: Slots;
  private readonly loadModule: () => Promise<NodeLlamaCppModule>;
  private runtime: Promise<{ module: NodeLlamaCppModule; llama: Llama }> | undefined;
  private readonly models = new Map<string, ModelEntry>();
  private disposed = false;

  constructor(options: LocalModelRegistryOptions = {}) {
    this.idleUnloadMs = options.idleUnloadMs ?? DEFAULT_IDLE_UNLOAD_MS;
    this.slots = new Slots(Math.max(1, options.maxConcurrentGenerations ?? 1));
    this.loadModule = options.loadModule ?? importNodeLlamaCpp;
  }

  /** node-llama-cpp itself, without loading its native part (for reading GGUF metadata). */
  module(): Promise<NodeLlamaCppModule> {
    return this.loadModule();
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.slots.queued;
  }

  /** Real paths of the models in memory (or being loaded). */
  loadedModelPaths(): string[] {
    return [...new Set([...this.models.values()].map((entry) => entry.path))];
  }

  isLoaded(modelPath: string): boolean {
    const path = safeRealpath(modelPath);
    return [...this.models.values()].some((entry) => entry.path === path);
  }

  /**
   * Runs `work` with the model loaded and a CPU slot held. Waiting for the slot ends with the signal's
   * reason when it aborts; load failures are ModelErrors.
   */
  async run<T>(config: LlamaCppModelConfig, signal: AbortSignal | undefined, work: (loaded: LoadedLocalModel) => Promise<T>): Promise<T> {
    if (this.disposed) throw new ModelError('Local models are shutting down');
    const release = await this.slots.acquire(signal);
    let entry: ModelEntry | undefined;
    try {
      if (this.disposed) throw new ModelError('Local models are shutting down');
      signal?.throwIfAborted();
      const { module, llama } = await this.ensureRuntime();
      entry = this.checkOut(config, llama);
      const model = await entry.ready;
      const { context, chat } = await this.contextFor(entry, model, config, module);
      return await work({ module, llama, model, context, chat });
    } finally {
      if (entry) this.checkIn(entry);
      release();
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const entries = [...this.models.values()];
    this.models.clear();
    await Promise.allSettled(entries.map((entry) => this.unload(entry)));
    const runtime = this.runtime;
    this.runtime = undefined;
    if (runtime) await runtime.then(({ llama }) => llama.dispose()).catch(() => undefined);
  }

  private ensureRuntime(): Promise<{ module: NodeLlamaCppModule; llama: Llama }> {
    this.runtime ??= (async () => {
      const module = await this.loadModule();
      // Prebuilt CPU binaries only: never compile, never download. maxThreads 0 lifts node-llama-cpp's
      // cap so each context gets exactly the threads it asks for.
      const llama = await module.getLlama({
        gpu: false,
        build: 'never',
        usePrebuiltBinaries: true,
        skipDownload: true,
        progressLogs: false,
        logLevel: module.LlamaLogLevel.error,
        maxThreads: 0,
      });
      return { module, llama };
    })().catch((error: unknown) => {
      this.runtime = undefined;
      throw new ModelError(`Local models are unavailable: node-llama-cpp could not start (${errorMessage(error)})`, { cause: error });
    });
    return this.runtime;
  }

  /** The model's entry, counted as in use; loading starts here when it is not in memory. */
  private checkOut(config: LlamaCppModelConfig, llama: Llama): ModelEntry {
    const path = safeRealpath(config.modelPath);
    const gpuLayers = llama.gpu === false ? 0 : (config.gpuLayers ?? 0);
    const key = `${path}|gpu=${gpuLayers}`;
    let entry = this.models.get(key);
    if (!entry) {
      const created: ModelEntry = {
        key,
        path,
        contexts: new Map(),
        active: 0,
        ready: llama.loadModel({ modelPath: path, gpuLayers }).catch((error: unknown) => {
          if (this.models.get(key) === created) this.models.delete(key);
          throw new ModelError(`Model '${basename(path)}' could not be loaded: ${errorMessage(error)}`, { cause: error });
        }),
      };
      entry = created;
      this.models.set(key, entry);
    }
    entry.active++;
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    return entry;
  }

  private checkIn(entry: ModelEntry): void {
    entry.active--;
    if (entry.active > 0 || this.models.get(entry.key) !== entry) return;
    entry.idleTimer = setTimeout(() => {
      if (entry.active > 0 || this.models.get(entry.key) !== entry) return;
      this.models.delete(entry.key);
      void this.unload(entry);
    }, this.idleUnloadMs);
    // An idle model must not keep the process alive.
    entry.idleTimer.unref?.();
  }

  private contextFor(entry: ModelEntry, model: LlamaModel, config: LlamaCppModelConfig, module: NodeLlamaCppModule): Promise<ContextEntry> {
    const key = `${config.contextSize ?? 'auto'}|${config.threads}`;
    let context = entry.contexts.get(key);
    if (!context) {
      const created = (async () => {
        const llamaContext = await model.createContext({
          contextSize: config.contextSize ?? { max: DEFAULT_MAX_CONTEXT_SIZE },
          threads: config.threads,
          sequences: 1,
        });
        // One sequence per context is enough: generations on a model never overlap (one slot each).
        return { context: llamaContext, chat: new module.LlamaChat({ contextSequence: llamaContext.getSequence() }) };
      })().catch((error: unknown) => {
        entry.contexts.delete(key);
        throw new ModelError(`Model '${basename(entry.path)}' could not get a context: ${errorMessage(error)}`, { cause: error });
      });
      context = created;
      entry.contexts.set(key, context);
    }
    return context;
  }

  private async unload(entry: ModelEntry): Promise<void> {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    const model = await entry.ready.catch(() => undefined);
    // Disposing the model disposes its contexts too.
    await model?.dispose().catch(() => undefined);
  }
}

function safeRealpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** Items pushed by callbacks, pulled by a `for await`. */
class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;

  push(item: T): void {
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  fail(error: unknown): void {
    this.failure = { error };
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (true) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
      } else if (this.failure) {
        throw this.failure.error;
      } else if (this.ended) {
        return;
      } else {
        await new Promise<void>((wake) => (this.wake = wake));
      }
    }
  }
}

const FINISH_REASONS: Record<string, FinishReason> = {
  eogToken: 'stop',
  customStopTrigger: 'stop',
  stopGenerationTrigger: 'stop',
  maxTokens: 'length',
  functionCalls: 'tool_calls',
  abort: 'stop',
};

export class LlamaCppChatProvider implements ChatProvider {
  private readonly name: string;

  constructor(
    private readonly config: LlamaCppModelConfig,
    private readonly registry: LocalModelRegistry,
  ) {
    // The file name, not the path: messages reach public callers, the folder layout is nobody's business.
    this.name = basename(config.modelPath);
  }

  chat(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): Promise<ChatSummary> {
    return this.generate(messages, options, signal);
  }

  async *stream(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
    signal?.throwIfAborted();
    // Our own controller too, so that a consumer leaving the loop stops generation.
    const stop = new AbortController();
    const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
    const channel = new Channel<StreamEvent>();
    const finished = this.generate(messages, options, combined, (text) => channel.push({ type: 'delta', text })).then(
      (summary) => {
        channel.push(doneEvent(summary));
        channel.end();
      },
      (error: unknown) => channel.fail(signal?.aborted ? abortReason(signal) : error),
    );
    try {
      yield* channel;
    } finally {
      stop.abort();
      // The slot is released only once generation has really stopped.
      await finished;
    }
  }

  async health(signal?: AbortSignal): Promise<ProviderHealth> {
    const problem = ggufFileProblem(this.config.modelPath);
    if (problem) return { healthy: false, message: `Model '${this.name}': ${problem}` };
    if (this.registry.isLoaded(this.config.modelPath)) {
      return { healthy: true, message: `Model '${this.name}' is loaded` };
    }
    // Reading the header checks the file without loading gigabytes of weights for a health check.
    try {
      const module = await this.registry.module();
      const info = await module.readGgufFileInfo(this.config.modelPath, {
        sourceType: 'filesystem',
        readTensorInfo: false,
        logWarnings: false,
        ...(signal ? { signal } : {}),
      });
      const architecture = info.metadata.general.architecture;
      return { healthy: true, message: `Model '${this.name}' is ready (${architecture}); it loads on first use` };
    } catch (error) {
      return { healthy: false, message: `Model '${this.name}' cannot be read: ${errorMessage(error)}` };
    }
  }

  private async generate(
    messages: ChatMessage[],
    options: ChatOptions,
    signal: AbortSignal | undefined,
    onText?: (text: string) => void,
  ): Promise<ChatSummary> {
    signal?.throwIfAborted();
    const started = performance.now();
    try {
      return await this.registry.run(this.config, signal, async ({ llama, model, context, chat }) => {
        const history = this.history(messages);
        const promptTokens = chat.chatWrapper
          .generateContextState({ chatHistory: [...history, { type: 'model', response: [] }] })
          .contextText.tokenize(model.tokenizer).length;
        let completionTokens = 0;
        const stops = options.stop_sequences.filter((sequence) => sequence !== '');
        const grammar = await this.grammar(llama, options.response_format);
        const generationStarted = performance.now();
        const generationOptions: LLamaChatGenerateResponseOptions = {
          maxTokens: options.max_tokens,
          temperature: options.temperature,
          ...(options.top_p !== undefined ? { topP: options.top_p } : {}),
          ...(options.seed !== undefined ? { seed: options.seed } : {}),
          ...(stops.length > 0 ? { customStopTriggers: stops } : {}),
          ...(grammar ? { grammar } : {}),
          repeatPenalty:
            options.presence_penalty === 0 && options.frequency_penalty === 0
              ? false
              : { penalty: 1, presencePenalty: options.presence_penalty, frequencyPenalty: options.frequency_penalty },
          ...(signal ? { signal } : {}),
          stopOnAbortSignal: false,
          onResponseChunk: (chunk) => {
            completionTokens += chunk.tokens.length;
            // Only the answer is streamed; thought segments are not part of it.
            if (chunk.type === undefined && chunk.text !== '') onText?.(chunk.text);
          },
        };
        const result = await chat.generateResponse(history, generationOptions);
        const generationMs = performance.now() - generationStarted;
        return {
          id: newCompletionId(),
          model: this.name,
          message: { role: 'assistant', content: result.response, tokens: completionTokens },
          finish_reason: FINISH_REASONS[result.metadata.stopReason] ?? 'stop',
          usage: sumUsage(promptTokens, completionTokens),
          provider_info: {
            provider: 'llama_cpp',
            response_time_ms: Math.round(performance.now() - started),
            generation_ms: Math.round(generationMs),
            tokens_per_second: generationMs > 0 ? Math.round((completionTokens / generationMs) * 1000 * 10) / 10 : 0,
            context_size: context.contextSize,
            threads: this.config.threads,
            chat_template: chat.chatWrapper.wrapperName,
          },
        } satisfies ChatSummary;
      });
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      if (error instanceof ModelError) throw error;
      throw new ModelError(`Model '${this.name}' failed: ${errorMessage(error)}`, { cause: error });
    }
  }

  private history(messages: ChatMessage[]): ChatHistoryItem[] {
    const history: ChatHistoryItem[] = [];
    if (this.config.systemPrompt) history.push({ type: 'system', text: this.config.systemPrompt });
    for (const message of messages) {
      if (message.role === 'system') history.push({ type: 'system', text: message.content });
      else if (message.role === 'user') history.push({ type: 'user', text: message.content });
      // A last assistant message is continued, as llama.cpp's own server does with a prefill.
      else history.push({ type: 'model', response: [message.content] });
    }
    return history;
  }

  private async grammar(llama: Llama, format: ResponseFormat | undefined): Promise<LlamaGrammar | undefined> {
    if (!format || format.type === 'text') return undefined;
    if (format.type === 'json_object') return llama.getGrammarFor('json');
    const schema = format.json_schema.schema;
    if (!schema) return llama.getGrammarFor('json');
    try {
      // The schema comes from the caller; node-llama-cpp checks what it supports and says what it does not.
      return await llama.createGrammarForJsonSchema(schema as GbnfJsonObjectSchema);
    } catch (error) {
      throw new ModelError(`Model '${this.name}' cannot follow this JSON schema: ${errorMessage(error)}`, { cause: error });
    }
  }
}
