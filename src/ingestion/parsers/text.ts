import { type FileLimits, NO_LIMITS, textTooLarge } from './limits.ts';
import { type ParsedDocument, ParseError } from './types.ts';

/**
 * Plain text and Markdown. A folder of notes always holds a few files with stray Latin-1 bytes, so
 * decoding is never fatal: invalid UTF-8 becomes U+FFFD and the rest of the file is still indexed.
 * Only bytes that are not text at all (an image or an archive renamed .txt) are refused, as binary.
 */

/**
 * Bytes to a string: a UTF-8 (or, when a UTF-16 byte-order mark says so, UTF-16) decode that replaces
 * invalid sequences, drops the BOM and turns CRLF/CR into LF so paragraph detection sees one kind of
 * line break.
 */
export function decodeText(bytes: Uint8Array): string {
  const encoding = bomEncoding(bytes);
  // TextDecoder consumes a matching BOM itself (ignoreBOM: false) and fatal: false substitutes U+FFFD.
  const text = new TextDecoder(encoding, { fatal: false, ignoreBOM: false }).decode(bytes);
  return text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
}

function bomEncoding(bytes: Uint8Array): 'utf-8' | 'utf-16le' | 'utf-16be' {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

/**
 * Past these shares the "text" is the bytes of something else (an image, an archive, random data)
 * renamed: indexing it would fill the index with junk. A French note in Latin-1 has a few per cent of
 * U+FFFD and no control characters; random bytes give about 11% control characters and 50% U+FFFD.
 */
const MAX_CONTROL_SHARE = 0.02;
const MAX_SUSPECT_SHARE = 0.3;

/** decodeText for files that must be text: bytes of another kind fail as "binary content, not text". */
export function decodeTextFile(bytes: Uint8Array): string {
  const encoding = bomEncoding(bytes);
  // UTF-16 text is full of zero bytes; in any 8-bit encoding a zero byte is never text.
  if (encoding === 'utf-8' && bytes.includes(0)) throw binaryContent();
  const text = decodeText(bytes);
  if (looksBinary(text)) throw binaryContent();
  return text;
}

function binaryContent(): ParseError {
  return new ParseError('binary', 'binary content, not text');
}

/** Counts control characters (line breaks, tabs, form feeds and ESC of coloured logs excepted) and U+FFFD. */
function looksBinary(text: string): boolean {
  if (text.length === 0) return false;
  let controls = 0;
  let replacements = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0xfffd) replacements++;
    else if ((code < 0x20 && !ALLOWED_CONTROLS.has(code)) || code === 0x7f) controls++;
  }
  return controls / text.length > MAX_CONTROL_SHARE || (controls + replacements) / text.length > MAX_SUSPECT_SHARE;
}

// Tab, line feed, vertical tab, form feed, carriage return, escape.
const ALLOWED_CONTROLS: ReadonlySet<number> = new Set([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1b]);

/**
 * Refuses, before decoding, a file that must yield more text than SVC_MAX_TEXT_MB: decoding a 100 MB log
 * only to drop it would briefly take three times that. Whatever the content, the text is at least half
 * the bytes of UTF-8 (CRLF becomes LF) and a quarter of UTF-16's, byte-order marks aside.
 */
function checkTextSize(bytes: Uint8Array, limits: FileLimits): void {
  const least = Math.floor(bomEncoding(bytes) === 'utf-8' ? (bytes.length - 3) / 2 : (bytes.length - 2) / 4);
  if (least > limits.maxTextBytes) throw textTooLarge(least, limits, true);
}

export function parseText(bytes: Uint8Array, limits: FileLimits = NO_LIMITS): ParsedDocument {
  checkTextSize(bytes, limits);
  return { sections: [{ text: decodeTextFile(bytes) }] };
}

/**
 * Markdown is indexed as written: the markup is little noise for an embedder, and headings and lists
 * are exactly the structure the chunker breaks on.
 */
export function parseMarkdown(bytes: Uint8Array, limits: FileLimits = NO_LIMITS): ParsedDocument {
  checkTextSize(bytes, limits);
  const text = decodeTextFile(bytes);
  const title = markdownTitle(text);
  return title === undefined ? { sections: [{ text }] } : { title, sections: [{ text }] };
}

const ATX_H1 = /^ {0,3}# +(.*?)(?:\s+#+)?\s*$/;
const FENCE = /^ {0,3}(```|~~~)/;

/** The first `# ` heading outside a code fence (a `#` comment in a shell snippet is not a title). */
export function markdownTitle(text: string): string | undefined {
  let inFence = false;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (FENCE.test(line)) {
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const heading = ATX_H1.exec(line)?.[1]?.trim();
    if (heading) return heading;
  }
  return undefined;
}
