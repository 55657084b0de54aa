import mammoth from 'mammoth';
import { errorMessage } from '../../domain/errors.ts';
import { openDocx } from './docx-zip.ts';
import { htmlToText } from './html.ts';
import type { FileLimits } from './limits.ts';
import { type ParsedDocument, ParseError } from './types.ts';

/**
 * DOCX through mammoth's HTML output rather than its raw text: raw text drops table structure (every
 * cell becomes its own paragraph), while the HTML keeps headings and rows that html.ts turns into
 * "cell | cell" lines.
 */

// Word's built-in "Title" style is where most documents put their title; mammoth ignores it by default.
const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];

const HEADING = /<h([1-6])\b[^>]*>([\s\S]*?)<\/h\1>/i;

export async function parseDocx(bytes: Uint8Array, limits: FileLimits): Promise<ParsedDocument> {
  // Opened here, with its sizes checked, rather than by mammoth (see docx-zip.ts). `file` is the input
  // mammoth's own openZip accepts besides `path` and `buffer`, though its typings list only those two;
  // were it ever dropped, every DOCX would fail loudly ("Could not find file in options"), never unchecked.
  const file = await openDocx(bytes, limits);
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { file } as unknown as { buffer: Buffer },
      // Images would become huge data: URIs that the text converter then has to skip.
      { styleMap: STYLE_MAP, convertImage: mammoth.images.imgElement(async () => ({ src: '' })) },
    );
    html = result.value;
  } catch (error) {
    if (error instanceof ParseError) throw error; // a limit, with its own reason
    throw new ParseError('damaged', `DOCX is damaged: ${describe(error)}`);
  }
  const text = htmlToText(html);
  const heading = HEADING.exec(html)?.[2];
  const title = heading === undefined ? '' : htmlToText(`<p>${heading}</p>`);
  return title ? { title, sections: [{ text }] } : { sections: [{ text }] };
}

/** The library's reason, worded for someone who saved a .docx. */
function describe(error: unknown): string {
  const message = errorMessage(error);
  // JSZip's wording for "not a zip at all" means nothing to someone who saved a .docx.
  if (/end of central directory|is this a zip file/i.test(message)) return 'not a valid DOCX (zip) file';
  return message.trim() || 'unknown error';
}
