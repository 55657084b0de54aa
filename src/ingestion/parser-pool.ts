import { workerUrl } from '../runtime/compiled.ts';
import { WorkerPool } from '../util/worker-pool.ts';
import type { ParseBudget, ParseRequest, ParseResponse, PreparedFile, PrepareOptions } from './parse-worker.ts';
import { isParseErrorCode, type ParsedDocument, ParseError } from './parsers/types.ts';

/**
 * Runs parseFile on a few Bun Worker threads (util/worker-pool.ts) so that a 500-page PDF never stalls
 * the HTTP thread. Each thread takes one file at a time; files queue in arrival order. A thread that
 * crashes or runs past the timeout is terminated and replaced, and only the file it was on fails (with
 * a reason). A file can also be cancelled (deleted, its dataset stopped): its thread is terminated the
 * same way, since pdf.js or mammoth cannot be interrupted in the middle of a file any other way.
 *
 * Every file has a parse budget, and one past it fails with a reason that names it: time (the thread is
 * terminated at the limit), pages (a PDF declaring more is refused before a page is read) and memory (the
 * thread measures its heap between pages and steps, and is replaced after it was over). Issue 22 found a
 * 20 MB PDF of 100,000 pages holding the only parse thread for 120 s and up to 2 GB.
 *
 * Parsing lanes: a dataset's files hold at most `size` threads at once, and `spare` more threads are kept
 * for the other datasets. With the default (1 + 1: two threads) a dataset's slow file never makes another
 * dataset wait: the other dataset's files go to the second thread (before, another dataset's three small
 * files waited 359 s behind three copies of that PDF; scripts/bench/parse-fairness.ts measures both). Two
 * threads on a 2-core machine: parsing waits for nothing else (embedding waits while files wait for the
 * keyword index, see keyword-first.ts), and a single dataset still parses on one thread, as before, leaving the
 * other core to the requests. A third dataset may wait behind two slow files, each at most the time budget.
 */

export interface ParserPoolOptions {
  /**
   * Parse threads one dataset may hold at once. Default 1: a dataset's files are parsed one at a time, as
   * with the single thread before; the other core serves requests and embeds.
   */
  size?: number;
  /** Threads kept for the other datasets while one dataset holds its `size`. Default 1 (see above). */
  spare?: number;
  /** Per-file time budget in milliseconds. Default DEFAULT_TIMEOUT_MS. */
  timeoutMs?: number;
  /** The most pages a PDF may have. Default DEFAULT_MAX_PAGES. */
  maxPages?: number;
  /** The most heap a parse thread may hold while it parses one file. Default DEFAULT_MAX_HEAP_BYTES. */
  maxHeapBytes?: number;
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

/**
 * The time budget of one file. The slowest files the other budgets admit, parsed alone on this 2-core
 * machine when it was quiet (scripts/bench/parse-fairness.ts --budgets): a 5,000-page PDF of book pages
 * (2,400 characters each, 14 MB, a flat page tree: pdf.js's worst shape) in 14.1 s, 15 MB of text in a DOCX
 * in 2.4 s, 19 MB of HTML in 2.1 s, 19 MB of plain text in 0.5 s. With other work on the machine (load
 * average 6 to 10 on its two cores) that PDF took 22 to 34 s, and once over 60 s. 90 s is about three times
 * the loaded figures and six times the quiet one, and three quarters of the 120 s a hostile file held the
 * thread for before. A longer parse costs less than it did: it holds its own dataset's lane, not everyone's.
 */
export const DEFAULT_TIMEOUT_MS = 90_000;

/**
 * The page budget of a PDF. Long real books fit: a 1,500-page textbook or a 3,000-page reference manual;
 * a 5,000-page PDF of book pages parses in about 14 s (above). pdf.js's cost per page grows with the page
 * count (1,000 pages: 2.0 s; 5,000: 14.1 s; the 100,000-page PDF of issue 22 had not finished in 300 s), so
 * a count in the tens of thousands is a hostile file, refused before a page is read.
 */
export const DEFAULT_MAX_PAGES = 5_000;

/**
 * The memory budget of a parse thread, for one file: its live JavaScript heap (the file's bytes, bounded by
 * SVC_MAX_FILE_MB, come on top). The 5,000-page PDF above ended with a 68 MB heap (the process peaked at
 * 302 MB resident); 15 MB of DOCX text peaked at 496 MB resident. 512 MB is over seven times the PDF's heap,
 * and with two threads keeps parsing within about 1 GB however hostile the files.
 */
const DEFAULT_MAX_HEAP_BYTES = 512 * 1024 * 1024;

// `new Worker(new URL(..., import.meta.url))` is the form Bun supports both from source and in a
// `bun build --compile` binary, where the worker file must also be listed as an entry point (see
// parse-worker.ts); workerUrl says where it sits in the binary.
const DEFAULT_WORKER_URL = workerUrl(new URL('./parse-worker.ts', import.meta.url), 'ingestion/parse-worker.ts');

export class ParserPool {
  /** Threads one dataset may hold at once. */
  readonly size: number;
  /** All threads: `size` and the spare ones. */
  readonly threadCount: number;
  readonly timeoutMs: number;
  readonly budget: ParseBudget;
  private readonly threads: WorkerPool<ParseRequest, ParseResponse, ParsedDocument | PreparedFile>;
  private closed = false;

  constructor(options: ParserPoolOptions = {}) {
    this.size = options.size ?? 1;
    const spare = options.spare ?? 1;
    this.threadCount = this.size + spare;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.budget = { maxPages: options.maxPages ?? DEFAULT_MAX_PAGES, maxHeapBytes: options.maxHeapBytes ?? DEFAULT_MAX_HEAP_BYTES };
    if (!Number.isInteger(this.size) || this.size < 1) throw new RangeError('parser pool size must be an integer >= 1');
    if (!Number.isInteger(spare) || spare < 0) throw new RangeError('parser pool spare must be an integer >= 0');
    if (!(this.timeoutMs > 0)) throw new RangeError('parser pool timeoutMs must be > 0');
    if (!(this.budget.maxPages >= 1) || !(this.budget.maxHeapBytes > 0)) throw new RangeError('parser pool budgets must be > 0');
    this.threads = new WorkerPool({
      size: this.threadCount,
      perKey: this.size,
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
      // A thread that was over its memory budget holds that heap still, and one that refused a PDF from
      // pdf.js's page count has walked its page tree (600 MB for 100,000 pages): it goes with the file.
      retire: (response) => !response.ok && (response.code === 'out_of_memory' || response.code === 'too_many_pages'),
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
   * Hashes, parses and chunks a file off this thread, within the parse budget; an unchanged hash skips the
   * parsing. When `signal` aborts, the promise rejects with its reason at once: a waiting file leaves the
   * queue, a file being parsed loses its thread (a new one starts for the next file). `dataset` names the
   * lane: one dataset's files hold at most `size` threads.
   */
  prepare(path: string, options: PrepareOptions, signal?: AbortSignal, dataset?: string): Promise<PreparedFile> {
    return this.submit(path, options, signal, dataset) as Promise<PreparedFile>;
  }

  /** `prepare` for a document handed over as bytes (a feed's item): `name` chooses its parser, nothing is read from disk. */
  prepareBytes(name: string, bytes: Uint8Array, options: PrepareOptions, signal?: AbortSignal, dataset?: string): Promise<PreparedFile> {
    return this.submit(name, options, signal, dataset, bytes) as Promise<PreparedFile>;
  }

  private submit(
    path: string,
    prepare?: PrepareOptions,
    signal?: AbortSignal,
    dataset?: string,
    bytes?: Uint8Array,
  ): Promise<ParsedDocument | PreparedFile> {
    if (this.closed) return Promise.reject(new ParserPoolClosedError());
    return this.threads.run({ path, ...(prepare ? { prepare, budget: this.budget } : {}), ...(bytes ? { bytes } : {}) }, signal, dataset);
  }

  /** Stops every thread; files still waiting or running reject with ParserPoolClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.threads.stop(new ParserPoolClosedError());
  }

  private timeoutMessage(): string {
    const seconds = this.timeoutMs / 1000;
    return `parsing took longer than the ${seconds < 1 ? seconds : Math.round(seconds)} s a file may take, and was stopped`;
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
