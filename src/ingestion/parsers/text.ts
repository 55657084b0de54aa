import type { ParsedDocument } from './types.ts';

/**
 * Plain text and Markdown. A folder of notes always holds a few files with stray Latin-1 bytes, so
 * decoding is never fatal: invalid UTF-8 becomes U+FFFD and the rest of the file is still indexed.
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

export function parseText(bytes: Uint8Array): ParsedDocument {
  return { sections: [{ text: decodeText(bytes) }] };
}

/**
 * Markdown is indexed as written: the markup is little noise for an embedder, and headings and lists
 * are exactly the structure the chunker breaks on.
 */
export function parseMarkdown(bytes: Uint8Array): ParsedDocument {
  const text = decodeText(bytes);
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
