import mammoth from 'mammoth';
import { htmlToText } from './html.ts';
import { ParseError, type ParsedDocument } from './types.ts';

/**
 * DOCX through mammoth's HTML output rather than its raw text: raw text drops table structure (every
 * cell becomes its own paragraph), while the HTML keeps headings and rows that html.ts turns into
 * "cell | cell" lines.
 */

// Word's built-in "Title" style is where most documents put their title; mammoth ignores it by default.
const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];

const HEADING = /<h([1-6])\b[^>]*>([\s\S]*?)<\/h\1>/i;

export async function parseDocx(bytes: Uint8Array): Promise<ParsedDocument> {
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      // Images would become huge data: URIs that the text converter then has to skip.
      { styleMap: STYLE_MAP, convertImage: mammoth.images.imgElement(async () => ({ src: '' })) },
    );
    html = result.value;
  } catch (error) {
    throw new ParseError('damaged', `DOCX is damaged: ${describe(error)}`);
  }
  const text = htmlToText(html);
  const heading = HEADING.exec(html)?.[2];
  const title = heading === undefined ? '' : htmlToText(`<p>${heading}</p>`);
  return title ? { title, sections: [{ text }] } : { sections: [{ text }] };
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // JSZip's wording for "not a zip at all" means nothing to someone who saved a .docx.
  if (/end of central directory|is this a zip file/i.test(message)) return 'not a valid DOCX (zip) file';
  return message.trim() || 'unknown error';
}
