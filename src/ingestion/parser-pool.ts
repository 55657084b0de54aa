import { workerUrl } from '../runtime/compiled.ts';
import type { ParseRequest, ParseResponse, PreparedFile, PrepareOptions } from './parse-worker.ts';
import { isParseErrorCode, type ParsedDocument, ParseError } from './parsers/types.ts';

/**
 * Runs parseFile on a few Bun Worker threads so that a 500-page PDF never stalls the HTTP thread.
 * Each thread takes one file at a time; files queue in arrival order. A thread that crashes or runs
 * past the timeout is terminated and replaced, and only the file it was on fails (with a reason).
 * A file can also be cancelled (deleted, its dataset stopped): its thread is terminated the same way,
 * since pdf.js or mammoth cannot be interrupted in the middle of a file any other way.
 */

export interface ParserPoolOptions {
  /** Parse threads. Default 1: on a 2-core machine the other core serves requests and embeds. */
  size?: number;
  /** Per-file limit in milliseconds. Default 120 000. */
  timeoutMs?: number;
  /** Worker entry point; tests point it at a misbehaving worker. */
  workerUrl?: URL | string;
}

/** parse() was called on a closed pool, or the pool closed while the file waited: not the file's fault. */
export class ParserPoolClosedError extends Error {
  override readonly name = 'ParserPoolClosedError';

  constructor() {
    super('parser pool is closed');
  }
}

const DEFAULT_TIMEOUT_MS = 120_000;

// `new Worker(new URL(..., import.meta.url))` is the form Bun supports both from source and in a
// `bun build --compile` binary, where the worker file must also be listed as an entry point (see
// parse-worker.ts); workerUrl says where it sits in the binary.
const DEFAULT_WORKER_URL = workerUrl(new URL('./parse-worker.ts', import.meta.url), 'ingestion/parse-worker.ts');

interface Task {
  id: number;
  path: string;
  prepare?: PrepareOptions;
  resolve: (result: ParsedDocument | PreparedFile) => void;
  reject: (error: unknown) => void;
}

interface Slot {
  worker?: Worker;
  task?: Task;
  timer?: ReturnType<typeof setTimeout>;
}

export class ParserPool {
  readonly size: number;
  readonly timeoutMs: number;
  private readonly workerUrl: URL | string;
  private readonly slots: Slot[];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;

  constructor(options: ParserPoolOptions = {}) {
    this.size = options.size ?? 1;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(this.size) || this.size < 1) throw new RangeError('parser pool size must be an integer >= 1');
    if (!(this.timeoutMs > 0)) throw new RangeError('parser pool timeoutMs must be > 0');
    this.workerUrl = options.workerUrl ?? DEFAULT_WORKER_URL;
    this.slots = Array.from({ length: this.size }, () => ({}));
  }

  /** Files waiting or being parsed. */
  get pending(): number {
    return this.queue.length + this.slots.filter((slot) => slot.task).length;
  }

  parse(path: string): Promise<ParsedDocument> {
    return this.submit(path) as Promise<ParsedDocument>;
  }

  /**
   * Hashes, parses and chunks a file off this thread; an unchanged hash skips the parsing. When `signal`
   * aborts, the promise rejects with its reason at once: a waiting file leaves the queue, a file being
   * parsed loses its thread (a new one starts for the next file).
   */
  prepare(path: string, options: PrepareOptions, signal?: AbortSignal): Promise<PreparedFile> {
    return this.submit(path, options, signal) as Promise<PreparedFile>;
  }

  private submit(path: string, prepare?: PrepareOptions, signal?: AbortSignal): Promise<ParsedDocument | PreparedFile> {
    if (this.closed) return Promise.reject(new ParserPoolClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => this.cancel(task, signal?.reason);
      const done = () => signal?.removeEventListener('abort', onAbort);
      const task: Task = {
        id: this.nextId++,
        path,
        ...(prepare ? { prepare } : {}),
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(task);
      this.dispatch();
    });
  }

  private cancel(task: Task, reason: unknown): void {
    const waiting = this.queue.indexOf(task);
    if (waiting >= 0) {
      this.queue.splice(waiting, 1);
      task.reject(reason);
      return;
    }
    const slot = this.slots.find((candidate) => candidate.task === task);
    if (!slot) return; // settled meanwhile
    this.retire(slot);
    task.reject(reason);
    this.dispatch();
  }

  /** Stops every thread; files still waiting or running reject with ParserPoolClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new ParserPoolClosedError();
    for (const task of this.queue.splice(0)) task.reject(error);
    for (const slot of this.slots) {
      slot.task?.reject(error);
      this.retire(slot);
    }
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.closed || this.queue.length === 0) return;
      if (slot.task) continue;
      const task = this.queue.shift();
      if (!task) return;
      const worker = slot.worker ?? this.spawn(slot);
      slot.task = task;
      // A busy thread keeps the process alive (a script awaiting a parse must not exit); an idle one does not.
      worker.ref();
      slot.timer = setTimeout(() => this.fail(slot, new ParseError('timeout', this.timeoutMessage())), this.timeoutMs);
      const request: ParseRequest = { id: task.id, path: task.path, ...(task.prepare ? { prepare: task.prepare } : {}) };
      worker.postMessage(request);
    }
  }

  private spawn(slot: Slot): Worker {
    const worker = new Worker(this.workerUrl);
    worker.unref();
    slot.worker = worker;
    // Events from a thread that was already replaced are ignored: its file has been settled.
    worker.addEventListener('message', (event: MessageEvent<ParseResponse>) => {
      if (slot.worker === worker) this.settle(slot, event.data);
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      const reason: unknown = event.error;
      if (slot.worker === worker) this.fail(slot, crashed(reason instanceof Error ? reason.message : plainReason(event.message)));
    });
    worker.addEventListener('close', () => {
      if (slot.worker === worker) this.fail(slot, crashed('the parse thread exited'));
    });
    return worker;
  }

  private settle(slot: Slot, response: ParseResponse): void {
    const task = slot.task;
    if (!task || response.id !== task.id) return;
    this.release(slot);
    if (response.ok) task.resolve((response.prepared ?? response.doc) as ParsedDocument | PreparedFile);
    else task.reject(new ParseError(isParseErrorCode(response.code) ? response.code : 'damaged', response.message));
    this.dispatch();
  }

  /** The thread is no longer trusted: its file fails, the thread goes, a new one starts on demand. */
  private fail(slot: Slot, error: ParseError): void {
    const task = slot.task;
    this.retire(slot);
    task?.reject(error);
    this.dispatch();
  }

  private release(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.task = undefined;
    slot.worker?.unref();
  }

  private retire(slot: Slot): void {
    const worker = slot.worker;
    this.release(slot);
    slot.worker = undefined;
    worker?.terminate();
  }

  private timeoutMessage(): string {
    const seconds = this.timeoutMs / 1000;
    return `parsing took longer than ${seconds < 1 ? seconds : Math.round(seconds)} s and was stopped`;
  }
}

/**
 * Bun leaves ErrorEvent.error null for a worker's uncaught exception and puts the whole formatted
 * report (source excerpt, "error: ...", stack) in `message`: keep only the error line.
 */
function plainReason(message: string | undefined): string {
  const lines = (message ?? '')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const errorLine = lines.findLast((line) => /^(error|\w*Error):\s/.test(line)) ?? lines.at(-1) ?? '';
  return errorLine.replace(/^error:\s*/, '');
}

function crashed(reason: string | undefined): ParseError {
  return new ParseError('worker_crashed', `the parser crashed on this file: ${reason?.trim() || 'unknown error'}`);
}
