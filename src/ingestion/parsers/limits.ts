import { heapSize } from 'bun:jsc';
import { ParseError } from './types.ts';

/**
 * How much one file may cost (API-CONTRACT 2): SVC_MAX_FILE_MB bytes read, SVC_MAX_TEXT_MB bytes of
 * text extracted. Without them one file (a 510 KB DOCX inflating to 500 MB of XML, a 200 MB log) held
 * gigabytes of memory and both embedding threads for hours.
 */
export interface FileLimits {
  readonly maxFileBytes: number;
  readonly maxTextBytes: number;
  /** The parse budget (parser-pool.ts): the most pages a PDF may have, checked before any page is read. */
  readonly maxPages?: number;
  /** The parse budget: the most JavaScript heap the parse thread may hold, checked between steps (checkMemory). */
  readonly maxHeapBytes?: number;
}

const MEGABYTE = 1024 * 1024;

/**
 * No limit: for callers that parse files they trust (tests, tools). Ingestion always passes the
 * configured limits; its PrepareOptions cannot be built without them.
 */
export const NO_LIMITS: FileLimits = Object.freeze({ maxFileBytes: Number.POSITIVE_INFINITY, maxTextBytes: Number.POSITIVE_INFINITY });

/** "150.0 MB": one decimal, so a file just over the limit does not read as equal to it. */
export function megabytes(bytes: number): string {
  return `${(bytes / MEGABYTE).toFixed(1)} MB`;
}

/** The limit as the operator wrote it ("100 MB"), so the reason names the setting to change. */
export function setting(bytes: number): string {
  return `${Math.round((bytes / MEGABYTE) * 100) / 100} MB`;
}

/** `soFar`: the file grew while it was read, and this is where reading stopped. */
/** The size with enough decimals to differ from the limit it exceeds ("20.0 MB, more than 20 MB" would puzzle). */
function beyond(bytes: number, limit: number): string {
  for (let digits = 1; digits <= 6; digits++) {
    const amount = (bytes / MEGABYTE).toFixed(digits);
    if (Number(amount) > limit / MEGABYTE) return `${amount} MB`;
  }
  return `${bytes} bytes`;
}

export function fileTooLarge(size: number, maxFileBytes: number, soFar = false): ParseError {
  const amount = soFar ? `more than ${megabytes(size)}` : beyond(size, maxFileBytes);
  return new ParseError('too_large', `file is ${amount}, larger than SVC_MAX_FILE_MB (${setting(maxFileBytes)})`);
}

/** `bytes` is what was found so far: a parser that stops early knows only that it is more. */
export function textTooLarge(bytes: number, limits: FileLimits, soFar = false): ParseError {
  const amount = soFar ? `more than ${megabytes(bytes)}` : beyond(bytes, limits.maxTextBytes);
  return new ParseError('too_large', `the file holds ${amount} of text, more than SVC_MAX_TEXT_MB (${setting(limits.maxTextBytes)})`);
}

/** UTF-8 size of a string without encoding it. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** A PDF past the page budget, told before a page of it is read. */
export function tooManyPages(pages: number, maxPages: number): ParseError {
  return new ParseError('too_many_pages', `the PDF has ${pages} pages, more than the ${maxPages} a file may have: not parsed`);
}

/** What the parse thread held when it was found over its memory budget. */
function outOfMemory(heapBytes: number, maxHeapBytes: number): ParseError {
  return new ParseError(
    'out_of_memory',
    `parsing held ${megabytes(heapBytes)} of memory, more than the ${setting(maxHeapBytes)} a file may use: stopped`,
  );
}

/**
 * The resident size above which the thread's own heap is measured again (see checkMemory); one per parse
 * thread, as each has its own module state. Kept from file to file: a heap measured live stays a fair
 * starting point, and measuring afresh for every file would cost a full collection per file whenever the
 * process is large for other reasons (a local model loaded).
 */
let nextMeasureAt = 0;

/**
 * Throws when this parse thread's JavaScript heap holds more than `limits.maxHeapBytes`. Called between
 * steps of a parse (every few PDF pages, after parsing, after chunking); a step cannot be interrupted, so
 * a step's own allocation is the most it can overshoot by.
 *
 * Bun ignores a Worker's `resourceLimits` (tried on Bun 1.4.5: a worker given maxOldGenerationSizeMb: 64
 * grew to 3.2 GB), so the thread measures itself. Measuring is not free: bun:jsc's heapSize() is exact only
 * after a full collection (between two it lagged the real heap by 2 GB) and a full collection of a 70 MB
 * heap takes tens of milliseconds. So the process's resident size, which is cheap to read and never less
 * than what this thread holds, decides when to measure: while it is under the budget this thread cannot be
 * over it, and after a measurement the thread is looked at again once the process has grown by the room
 * that measurement left (memory other threads give back meanwhile makes this approximate, never by more
 * than what they gave back).
 */
export function checkMemory(limits: FileLimits): void {
  const max = limits.maxHeapBytes;
  if (max === undefined || !Number.isFinite(max)) return;
  const rss = process.memoryUsage.rss();
  if (rss < Math.max(max, nextMeasureAt)) return;
  Bun.gc(true);
  const live = heapSize();
  if (live > max) throw outOfMemory(live, max);
  nextMeasureAt = rss + (max - live);
}
