import type { ParsedDocument, TableLocation } from './parsers/types.ts';

/**
 * Splits a parsed document into chunks of at most `chunkSize` characters (UTF-16 code units, as
 * String#length counts them) that overlap by about `chunkOverlap` characters.
 *
 * Each chunk ends at the best boundary in its window: a blank line (paragraph), else a sentence end,
 * else a line break, else a space; a structural boundary only counts in the second half of the window,
 * so that one early paragraph break does not produce a tiny chunk. A word is cut only when it is
 * longer than a whole chunk. Chunks never span two pages, so each carries one page number.
 *
 * Linear in the text: each chunk scans at most its window backwards from the limit, every step moves
 * forward at least half a chunk, and chunks are slices of the original string (no concatenation).
 */

export interface ChunkOptions {
  chunkSize: number;
  chunkOverlap: number;
}

export interface Chunk {
  text: string;
  page?: number;
  /** The sheet (or JSON path) and rows of a table's section: a spreadsheet's "page". */
  location?: TableLocation;
  chunk_index: number;
}

export function chunkDocument(doc: ParsedDocument, options: ChunkOptions): Chunk[] {
  validate(options);
  const chunks: Chunk[] = [];
  for (const section of doc.sections) {
    for (const text of chunkText(section.text, options)) {
      const chunk: Chunk = { text, chunk_index: chunks.length };
      if (section.page !== undefined) chunk.page = section.page;
      if (section.location !== undefined) chunk.location = section.location;
      chunks.push(chunk);
    }
  }
  return chunks;
}

/** The chunks of one run of text, without page or index. */
export function chunkText(text: string, { chunkSize, chunkOverlap }: ChunkOptions): string[] {
  const chunks: string[] = [];
  let start = skipSpace(text, 0);
  while (start < text.length) {
    if (text.length - start <= chunkSize) {
      chunks.push(text.slice(start).trimEnd());
      break;
    }
    const end = findBreak(text, start, start + chunkSize, start + Math.floor(chunkSize / 2));
    chunks.push(text.slice(start, end).trimEnd());
    const next = skipSpace(text, end);
    if (next >= text.length) break;
    start = chunkOverlap > 0 ? overlapStart(text, start, end, chunkOverlap, next) : next;
  }
  return chunks;
}

function validate({ chunkSize, chunkOverlap }: ChunkOptions): void {
  if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new RangeError('chunkSize must be an integer >= 1');
  if (!Number.isInteger(chunkOverlap) || chunkOverlap < 0 || chunkOverlap >= chunkSize) {
    throw new RangeError('chunkOverlap must be an integer >= 0 and smaller than chunkSize');
  }
}

/**
 * Where the chunk starting at `start` ends (exclusive), at most `limit`. Scans backwards once,
 * remembering the last boundary of each kind; stops at the first paragraph break at or after `minEnd`.
 */
function findBreak(text: string, start: number, limit: number, minEnd: number): number {
  const found: Boundaries = { sentence: -1, line: -1, word: -1, newlineAhead: false };
  // A break at p means: the chunk is text[start, p) and the character at p is whitespace (or the
  // previous character ends a CJK sentence, which needs no space after it).
  for (let p = limit; p > start; p--) {
    if (atParagraphBreak(text, p, minEnd, found)) return p;
    noteBoundary(text, p, minEnd, found);
    // Below the second half only a word break can still be wanted, and the first one found is the best.
    if (p < minEnd && found.word >= 0) break;
  }
  if (found.sentence >= 0) return found.sentence;
  if (found.line >= 0) return found.line;
  if (found.word >= 0) return found.word;
  // One word longer than the whole chunk: cut it, but not between the halves of a surrogate pair
  // (unless the chunk would then be empty: a chunk size of 1 cannot hold the pair).
  return isHighSurrogate(text.charCodeAt(limit - 1)) && limit - 1 > start ? limit - 1 : limit;
}

/** The last boundary of each kind findBreak's backward scan has seen (-1: none yet). */
interface Boundaries {
  sentence: number;
  line: number;
  word: number;
  /** True while only spaces/tabs separate the position from a newline seen further right. */
  newlineAhead: boolean;
}

/** Follows newlines at `p`: true at a paragraph break (two newlines with only spaces between) at or after `minEnd`. */
function atParagraphBreak(text: string, p: number, minEnd: number, found: Boundaries): boolean {
  const code = text.charCodeAt(p);
  if (code === NEWLINE) {
    if (found.newlineAhead && p >= minEnd) return true;
    found.newlineAhead = true;
    if (found.line < 0 && p >= minEnd) found.line = p;
  } else if (!isSpace(code)) {
    found.newlineAhead = false;
  }
  return false;
}

/** Remembers `p` as the last word break, and as the last sentence end when it is one at or after `minEnd`. */
function noteBoundary(text: string, p: number, minEnd: number, found: Boundaries): void {
  if (isSpace(text.charCodeAt(p))) {
    if (found.word < 0) found.word = p;
    if (found.sentence < 0 && p >= minEnd && endsSentence(text, p)) found.sentence = p;
  } else if (found.sentence < 0 && p >= minEnd && isCjkStop(text.charCodeAt(p - 1))) {
    found.sentence = p;
  }
}

/**
 * Where the next chunk starts: about `overlap` characters before `end`, moved forward to the start
 * of a word, and never before the middle of the chunk just made, so every step makes progress.
 */
function overlapStart(text: string, start: number, end: number, overlap: number, next: number): number {
  let p = Math.max(end - overlap, start + Math.ceil((end - start) / 2));
  if (p > 0 && !isSpace(text.charCodeAt(p - 1))) {
    while (p < end && !isSpace(text.charCodeAt(p))) p++;
  }
  p = skipSpace(text, p);
  return p < end ? p : next;
}

function skipSpace(text: string, from: number): number {
  let p = from;
  while (p < text.length && isSpace(text.charCodeAt(p))) p++;
  return p;
}

/** A sentence ends just before `p` (whitespace): ".", "!", "?" or "…", possibly followed by a closing quote or bracket. */
function endsSentence(text: string, p: number): boolean {
  let q = p - 1;
  if (CLOSERS.has(text.charCodeAt(q))) q--;
  return SENTENCE_ENDS.has(text.charCodeAt(q));
}

const NEWLINE = 10;
const SENTENCE_ENDS = new Set([0x2e, 0x21, 0x3f, 0x2026]); // . ! ? …
const CLOSERS = new Set([0x22, 0x27, 0x29, 0x5d, 0x201d, 0x2019, 0xbb]); // " ' ) ] ” ’ »
const CJK_STOPS = new Set([0x3002, 0xff01, 0xff1f]); // 。！？

function isCjkStop(code: number): boolean {
  return CJK_STOPS.has(code);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** The characters String#trim removes. */
function isSpace(code: number): boolean {
  return (
    code === 32 ||
    (code >= 9 && code <= 13) ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
