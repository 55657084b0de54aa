/**
 * The local models in memory, shared by every llama_cpp provider of the process (`dispose()` at
 * shutdown):
 * - one loaded model per file (its real path), loaded on first use and unloaded after `idleUnloadMs`
 *   without use (default 10 minutes);
 * - one context per model and context configuration, with a single sequence: generations on a model
 *   never overlap, because
 * - each generation holds a CPU slot: it already uses every core (`threads` defaults to the core count),
 *   so running two at once would only make both slower; requests wait in FIFO order instead (default:
 *   one slot for all local models).
 * gpu_layers is part of a model's key, but only CPU binaries ship, so layers always run on the CPU.
 */
import { realpathSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { Llama, LlamaChat, LlamaContext, LlamaModel } from 'node-llama-cpp';
import { errorMessage } from '../../domain/errors.ts';
import { Slots } from '../../util/slots.ts';
import type { LlamaCppConfiguration } from '../model-config.ts';
import { ModelError } from '../provider.ts';
import { LlamaLoader, type NodeLlamaCppModule } from './loader.ts';

const DEFAULT_IDLE_UNLOAD_MS = 10 * 60 * 1000;
/** Context window when none is configured: "auto" could size it to a model's 128k training context. */
export const DEFAULT_MAX_CONTEXT_SIZE = 4096;

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

export class LocalModelRegistry {
  private readonly idleUnloadMs: number;
  private readonly slots: Slots;
  private readonly loader: LlamaLoader;
  private readonly models = new Map<string, ModelEntry>();
  private disposed = false;

  constructor(options: LocalModelRegistryOptions = {}) {
    this.idleUnloadMs = options.idleUnloadMs ?? DEFAULT_IDLE_UNLOAD_MS;
    this.slots = new Slots(Math.max(1, options.maxConcurrentGenerations ?? 1));
    this.loader = new LlamaLoader(options.loadModule);
  }

  /** node-llama-cpp itself, without loading its native part (for reading GGUF metadata). */
  module(): Promise<NodeLlamaCppModule> {
    return this.loader.module();
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
  async run<T>(config: LlamaCppConfiguration, signal: AbortSignal | undefined, work: (loaded: LoadedLocalModel) => Promise<T>): Promise<T> {
    if (this.disposed) throw new ModelError('Local models are shutting down');
    const release = await this.slots.acquire(signal);
    let entry: ModelEntry | undefined;
    try {
      if (this.disposed) throw new ModelError('Local models are shutting down');
      signal?.throwIfAborted();
      const { module, llama } = await this.loader.start();
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
    await this.loader.dispose();
  }

  /** The model's entry, counted as in use; loading starts here when it is not in memory. */
  private checkOut(config: LlamaCppConfiguration, llama: Llama): ModelEntry {
    const path = safeRealpath(resolve(config.model_path));
    const gpuLayers = llama.gpu === false ? 0 : (config.gpu_layers ?? 0);
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

  private contextFor(
    entry: ModelEntry,
    model: LlamaModel,
    config: LlamaCppConfiguration,
    module: NodeLlamaCppModule,
  ): Promise<ContextEntry> {
    // 0 or absent: as large as memory allows, up to DEFAULT_MAX_CONTEXT_SIZE.
    const contextSize = config.context_size || undefined;
    const key = `${contextSize ?? 'auto'}|${config.threads}`;
    let context = entry.contexts.get(key);
    if (!context) {
      const created = (async () => {
        const llamaContext = await model.createContext({
          contextSize: contextSize ?? { max: DEFAULT_MAX_CONTEXT_SIZE },
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
