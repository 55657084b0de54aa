import type { Embedder } from '../embeddings/embedder.ts';
import { FairQueue } from './fair-queue.ts';

/** How much one slice may embed: small enough to take about a second, large enough to batch well. */
export interface SliceLimits {
  readonly texts: number;
  readonly characters: number;
}

export interface EmbeddingSchedulerOptions {
  /**
   * Slices embedded at once (2 keeps both USE-lite threads busy across the gap between slices); a function
   * is asked before each slice starts (0 holds them back: call `recheck` when it may have changed).
   */
  readonly concurrency: number | (() => number);
  readonly slice: SliceLimits;
  /** Called when a dataset's waiting text shrinks (the parse gate may let its next file through). */
  readonly onProgress?: () => void;
}

/** One file's texts waiting for their vectors. */
interface Request {
  readonly key: string;
  readonly embedder: Embedder;
  readonly texts: readonly string[];
  readonly vectors: Float32Array[];
  readonly signal: AbortSignal;
  /** The first text not yet handed to a slice. */
  next: number;
  /** Texts still without a vector. */
  missing: number;
  settled: boolean;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
}

/** Texts next..end of one request, inside a slice. */
interface Part {
  readonly request: Request;
  readonly start: number;
  end: number;
}

interface Slice {
  readonly embedder: Embedder;
  readonly parts: Part[];
  readonly texts: string[];
}

/**
 * Embeds files' chunks in small slices that take turns across datasets. Without it a file of 20,000
 * chunks was one embed call: every other dataset waited for it to finish, and deleting the file could
 * not stop it. Now each dataset's texts wait in their own line; a slice takes up to `slice.texts` texts
 * (from one file or several small ones of the same dataset, which keeps batches full) from the dataset
 * whose turn it is. A file whose signal aborts leaves at once: its waiting texts are dropped, and a
 * slice in flight is abandoned when every file in it was cancelled.
 */
export class EmbeddingScheduler {
  private readonly lines = new FairQueue<Request>();
  private readonly waiting = new Map<string, number>();
  private running = 0;

  constructor(private readonly options: EmbeddingSchedulerOptions) {}

  /** Characters of `key`'s texts not yet handed to a slice: how far its parsing is ahead of the embedder. */
  waitingCharacters(key: string): number {
    return this.waiting.get(key) ?? 0;
  }

  /** One vector per text, in order; rejects with the signal's reason as soon as it aborts. */
  embed(key: string, embedder: Embedder, texts: readonly string[], signal: AbortSignal): Promise<Float32Array[]> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const request: Request = {
        key,
        embedder,
        texts,
        vectors: new Array<Float32Array>(texts.length),
        signal,
        next: 0,
        missing: texts.length,
        settled: false,
        resolve,
        reject,
      };
      signal.addEventListener('abort', () => this.settle(request, signal.reason), { once: true });
      this.lines.push(key, request);
      this.addWaiting(key, characters(texts, 0, texts.length));
      this.pump();
    });
  }

  /** Starts waiting slices if the concurrency now allows more. */
  recheck(): void {
    this.pump();
  }

  private pump(): void {
    const { concurrency } = this.options;
    while (this.running < (typeof concurrency === 'number' ? concurrency : concurrency())) {
      const slice = this.lines.serve((line, key) => this.cut(line, key));
      if (!slice) return;
      this.running++;
      void this.run(slice).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /** Takes texts from the front of one dataset's line, up to the slice limits. */
  private cut(line: Request[], key: string): Slice | undefined {
    const embedder = line[0]?.embedder;
    if (!embedder) return undefined;
    const slice: Slice = { embedder, parts: [], texts: [] };
    let size = 0;
    while (line.length > 0) {
      const request = line[0] as Request;
      if (request.embedder !== embedder) break; // a restarted dataset's new embedder gets its own slice
      const part: Part = { request, start: request.next, end: request.next };
      size = this.fill(slice, request, size);
      part.end = request.next;
      if (part.end > part.start) slice.parts.push(part);
      if (request.next < request.texts.length) break; // the slice is full
      line.shift();
    }
    this.addWaiting(key, -size);
    return slice.texts.length > 0 ? slice : undefined;
  }

  /** Moves the request's next texts into the slice until it is full (a slice takes one text at least); the slice's new size. */
  private fill(slice: Slice, request: Request, size: number): number {
    let filled = size;
    while (request.next < request.texts.length) {
      const text = request.texts[request.next] as string;
      const full = slice.texts.length >= this.options.slice.texts || filled + text.length > this.options.slice.characters;
      if (full && slice.texts.length > 0) break;
      slice.texts.push(text);
      filled += text.length;
      request.next++;
    }
    return filled;
  }

  private async run(slice: Slice): Promise<void> {
    // Abandoned only when every file in it was cancelled: the others still want their vectors.
    const controller = new AbortController();
    const onAbort = () => {
      if (slice.parts.every((part) => part.request.signal.aborted)) controller.abort(slice.parts[0]?.request.signal.reason);
    };
    for (const part of slice.parts) part.request.signal.addEventListener('abort', onAbort);
    try {
      onAbort();
      const vectors = await slice.embedder.embed(slice.texts, controller.signal);
      let offset = 0;
      for (const part of slice.parts) {
        this.deliver(part, vectors, offset);
        offset += part.end - part.start;
      }
    } catch (error) {
      for (const part of slice.parts) this.settle(part.request, error);
    } finally {
      for (const part of slice.parts) part.request.signal.removeEventListener('abort', onAbort);
    }
  }

  private deliver(part: Part, vectors: Float32Array[], offset: number): void {
    const { request } = part;
    if (request.settled) return;
    for (let index = part.start; index < part.end; index++) request.vectors[index] = vectors[offset + index - part.start] as Float32Array;
    request.missing -= part.end - part.start;
    if (request.missing === 0) this.settle(request);
  }

  /** Resolves (no error) or rejects a request once; texts it still had waiting leave the line. */
  private settle(request: Request, error?: unknown): void {
    if (request.settled) return;
    request.settled = true;
    if (this.lines.delete(request.key, request)) {
      this.addWaiting(request.key, -characters(request.texts, request.next, request.texts.length));
    }
    if (error === undefined) request.resolve(request.vectors);
    else request.reject(error);
  }

  private addWaiting(key: string, delta: number): void {
    const next = (this.waiting.get(key) ?? 0) + delta;
    if (next > 0) this.waiting.set(key, next);
    else this.waiting.delete(key);
    if (delta < 0) this.options.onProgress?.();
  }
}

function characters(texts: readonly string[], from: number, to: number): number {
  let total = 0;
  for (let index = from; index < to; index++) total += (texts[index] as string).length;
  return total;
}
