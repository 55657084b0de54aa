import { workerUrl } from '../runtime/compiled.ts';
import { WorkerPool } from '../util/worker-pool.ts';
import type { ParseRequest, ParseResponse, PreparedFile, PrepareOptions } from './parse-worker.ts';
import { isParseErrorCode, type ParsedDocument, ParseError } from './parsers/types.ts';

/**
 * Runs parseFile on a few Bun Worker threads (util/worker-pool.ts) so that a 500-page PDF never stalls
 * the HTTP thread. Each thread takes one file at a time; files queue in arrival order. A thread that
 * crashes or runs past the timeout is terminated and replaced, and only the file it was on fails (with
 * a reason). A file can also be cancelled (deleted, its dataset stopped): its thread is terminated the
 * same way, since pdf.js or mammoth cannot be interrupted in the middle of a file any other way.
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

export class ParserPool {
  readonly size: number;
  readonly timeoutMs: number;
  private readonly threads: WorkerPool<ParseRequest, ParseResponse, ParsedDocument | PreparedFile>;
  private closed = false;

  constructor(options: ParserPoolOptions = {}) {
    this.size = options.size ?? 1;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(this.size) || this.size < 1) throw new RangeError('parser pool size must be an integer >= 1');
    if (!(this.timeoutMs > 0)) throw new RangeError('parser pool timeoutMs must be > 0');
    this.threads = new WorkerPool({
      size: this.size,
      url: options.workerUrl ?? DEFAULT_WORKER_URL,
      result: (response) => {
        if (response.ok) return (response.prepared ?? response.doc) as ParsedDocument | PreparedFile;
        throw new ParseError(isParseErrorCode(response.code) ? response.code : 'damaged', response.message);
      },
      timeout: { ms: this.timeoutMs, error: () => new ParseError('timeout', this.timeoutMessage()) },
      crashed: (event) => {
        const reason: unknown = event.error;
        return crashed(reason instanceof Error ? reason.message : plainReason(event.message));
      },
      exited: () => crashed('the parse thread exited'),
      // pdf.js and mammoth cannot be interrupted in the middle of a file any other way, and a new parse
      // thread has nothing costly to load.
      abort: 'interrupt',
    });
  }

  /** Files waiting or being parsed. */
  get pending(): number {
    return this.threads.pending;
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
    return this.threads.run({ path, ...(prepare ? { prepare } : {}) }, signal);
  }

  /** Stops every thread; files still waiting or running reject with ParserPoolClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.threads.stop(new ParserPoolClosedError());
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
