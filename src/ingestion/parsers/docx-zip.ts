import JSZip from 'jszip';
import { errorMessage } from '../../domain/errors.ts';
import { type FileLimits, megabytes, setting } from './limits.ts';
import { ParseError } from './types.ts';

/**
 * The DOCX (zip) container, opened so that it cannot inflate without bound: a 510 KB DOCX once
 * expanded to 500 MB of XML. The XLSX reader opens its zip the same way (`openOfficeZip`, the same
 * container format). JSZip (the zip library mammoth itself uses) reads the central directory
 * without inflating anything; then
 * - the declared sizes of the XML parts are added up and a file declaring more than SVC_MAX_TEXT_MB is
 *   refused before a single byte is inflated;
 * - mammoth reads the parts through `read` below, which inflates each one as a stream, stops as soon
 *   as the part grows past its declared size (a zip may lie: JSZip compares the sizes only after
 *   inflating everything) and counts every part against the same budget, whatever its name.
 */

/** The zip interface mammoth reads a document through (mammoth/lib/zipfile.js). */
export interface DocxZip {
  exists(name: string): boolean;
  read(name: string, encoding?: string): Promise<Uint8Array | string>;
}

/** An Office document's zip: mammoth's interface, and the names of its XML parts (for the XLSX reader). */
export interface OfficeZip extends DocxZip {
  readonly xmlParts: readonly string[];
}

/** The format named in the reasons: "the XLSX declares ...", "DOCX is damaged: ...". */
export type OfficeFormat = 'DOCX' | 'XLSX';

// Parts mammoth reads are XML: the document, styles, numbering, notes, comments and relationships.
// Images are not inflated: our convertImage never reads them.
const XML_PART = /\.(xml|rels)$/i;

export function openDocx(bytes: Uint8Array, limits: FileLimits): Promise<DocxZip> {
  return openOfficeZip(bytes, limits, 'DOCX');
}

export async function openOfficeZip(bytes: Uint8Array, limits: FileLimits, format: OfficeFormat): Promise<OfficeZip> {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(bytes);
  } catch (error) {
    throw damaged(error, format);
  }
  const declared = declaredXmlBytes(zip, format);
  if (declared > limits.maxTextBytes) {
    throw new ParseError(
      'too_large',
      `the ${format} declares ${megabytes(declared)} of XML, more than SVC_MAX_TEXT_MB (${setting(limits.maxTextBytes)}): not inflated`,
    );
  }
  const budget = { left: limits.maxTextBytes };
  const xmlParts: string[] = [];
  zip.forEach((path, entry) => {
    if (!entry.dir && XML_PART.test(path)) xmlParts.push(path);
  });
  return {
    xmlParts,
    exists: (name) => zip.file(name) !== null,
    read: async (name, encoding) => {
      const entry = zip.file(name);
      if (!entry) throw new ParseError('damaged', `${format} is damaged: part '${name}' is missing`);
      const data = await inflateBounded(entry, budget, limits, format);
      if (encoding === 'base64') return Buffer.from(data).toString('base64');
      // mammoth asks for "utf-8" (XML parts) or nothing (binary parts).
      return encoding ? new TextDecoder(encoding as 'utf-8').decode(data) : data;
    },
  };
}

function declaredXmlBytes(zip: JSZip, format: OfficeFormat): number {
  let total = 0;
  zip.forEach((path, entry) => {
    if (!entry.dir && XML_PART.test(path)) total += declaredSize(entry, format);
  });
  return total;
}

/**
 * The uncompressed size the central directory declares. JSZip keeps it in the entry's `_data`, which
 * its typings call private ("if/when it is made public this should be uncommented"); it has been there
 * since JSZip 3.0. Should it ever move, every DOCX fails with this message rather than going unchecked.
 */
function declaredSize(entry: JSZip.JSZipObject, format: OfficeFormat): number {
  const data = (entry as unknown as { _data?: { uncompressedSize?: unknown } })._data;
  const size = data?.uncompressedSize;
  if (typeof size !== 'number' || !Number.isFinite(size) || size < 0) {
    throw new ParseError('damaged', `the ${format} could not be checked: its zip entries do not declare their sizes`);
  }
  return size;
}

/**
 * Inflates one part as a stream (JSZip's public nodeStream) and stops reading as soon as it grows past
 * its declared size: the little inflated beyond that is dropped, never kept.
 */
function inflateBounded(entry: JSZip.JSZipObject, budget: { left: number }, limits: FileLimits, format: OfficeFormat): Promise<Uint8Array> {
  const declared = declaredSize(entry, format);
  if (declared > budget.left) {
    const limit = setting(limits.maxTextBytes);
    const message = `the ${format} parts read add up to more than SVC_MAX_TEXT_MB (${limit}): '${entry.name}' not inflated`;
    return Promise.reject(new ParseError('too_large', message));
  }
  budget.left -= declared;
  return new Promise<Uint8Array>((resolve, reject) => {
    const parts: Buffer[] = [];
    let length = 0;
    const stream = entry.nodeStream('nodebuffer');
    const stop = (error: ParseError) => {
      stream.removeAllListeners('data');
      stream.pause();
      (stream as { destroy?: () => void }).destroy?.();
      reject(error);
    };
    stream.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > declared) {
        stop(
          new ParseError('damaged', `${format} is damaged: part '${entry.name}' inflates to more than the ${declared} bytes it declares`),
        );
        return;
      }
      parts.push(chunk);
    });
    stream.on('error', (error: unknown) => reject(damaged(error, format)));
    stream.on('end', () => resolve(Buffer.concat(parts, length)));
  });
}

function damaged(error: unknown, format: OfficeFormat): ParseError {
  if (error instanceof ParseError) return error;
  const message = errorMessage(error);
  // JSZip's wording for "not a zip at all" means nothing to someone who saved a .docx.
  if (/end of central directory|is this a zip file/i.test(message))
    return new ParseError('damaged', `${format} is damaged: not a valid ${format} (zip) file`);
  return new ParseError('damaged', `${format} is damaged: ${message.trim() || 'unknown error'}`);
}
