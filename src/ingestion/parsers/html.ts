import { compile, type SelectorDefinition } from 'html-to-text';
import { decodeTextFile } from './text.ts';
import type { ParsedDocument } from './types.ts';

/**
 * HTML to searchable text with html-to-text. The same converter serves DOCX (mammoth turns it into
 * HTML first), so both formats keep headings and tables the same way.
 */

const CELL_SEPARATOR = { format: 'inlineSurround', options: { prefix: ' | ' } };

const SELECTORS: SelectorDefinition[] = [
  // Code, styling and embedded widgets are not the page's content.
  ...['script', 'style', 'noscript', 'template', 'iframe', 'object', 'svg', 'head'].map((selector) => ({
    selector,
    format: 'skip',
  })),
  { selector: 'img', format: 'skip' },
  // A URL in brackets after every link is noise for embeddings and keyword search alike.
  { selector: 'a', options: { ignoreHref: true } },
  // html-to-text upper-cases headings by default, which would change what keyword search matches.
  ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
  // One table row per line with cells joined by " | ": the `dataTable` layout pads and wraps cells,
  // which scrambles their words across lines.
  { selector: 'table', format: 'block' },
  { selector: 'tr', format: 'block', options: { leadingLineBreaks: 1, trailingLineBreaks: 1 } },
  { selector: 'td + td', ...CELL_SEPARATOR },
  { selector: 'th + th', ...CELL_SEPARATOR },
  { selector: 'td + th', ...CELL_SEPARATOR },
  { selector: 'th + td', ...CELL_SEPARATOR },
  // mammoth wraps every cell's text in <p>; as blocks they would break the row over several lines.
  { selector: 'td > p', format: 'inline' },
  { selector: 'th > p', format: 'inline' },
  { selector: 'td > p + p', format: 'inlineSurround', options: { prefix: ' ' } },
  { selector: 'th > p + p', format: 'inlineSurround', options: { prefix: ' ' } },
];

const toText = compile({
  wordwrap: false,
  // The default silently truncates input past 16 MiB; a large page must be indexed whole.
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
  selectors: SELECTORS,
});

export function htmlToText(html: string): string {
  return toText(html).trim();
}

const TITLE = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i;

export function parseHtml(bytes: Uint8Array): ParsedDocument {
  const html = decodeTextFile(bytes);
  const text = htmlToText(html);
  const rawTitle = TITLE.exec(html)?.[1];
  // Run the title through the converter too, so entities (&amp;) decode and whitespace collapses.
  const title = rawTitle === undefined ? '' : htmlToText(`<p>${rawTitle}</p>`);
  return title ? { title, sections: [{ text }] } : { sections: [{ text }] };
}
