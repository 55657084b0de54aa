import { errorMessage } from '../../domain/errors.ts';
import { ensureDomMatrix } from './dom-matrix.ts';
import { checkMemory, type FileLimits, textTooLarge, tooManyPages, utf8Bytes } from './limits.ts';
import { type ParsedDocument, type ParsedSection, ParseError } from './types.ts';

/**
 * PDF text, one section per page, with pdf-parse 2 (pdf.js underneath).
 *
 * pdf.js needs two things before it loads in Bun, and both must also hold inside the compiled binary,
 * where node_modules does not exist:
 * - a global DOMMatrix (see dom-matrix.ts);
 * - its worker code. pdf.js in a server runtime runs a "fake worker" on the calling thread and, unless
 *   `globalThis.pdfjsWorker` is already set, finds it with a runtime `import()` of a path relative to
 *   its own file, which a bundle cannot resolve. Importing the worker module ourselves sets that global,
 *   and a literal import is one the bundler embeds. Running in-thread is what we want anyway: parsing
 *   already happens on a parse-worker thread, off the request path.
 * pdf.js is loaded lazily, on the first PDF, so a folder of notes never pays for it.
 */

type PdfParseModule = typeof import('pdf-parse');

let pdfParseModule: Promise<PdfParseModule> | undefined;

function loadPdfParse(): Promise<PdfParseModule> {
  pdfParseModule ??= withoutCanvasWarnings(async () => {
    ensureDomMatrix();
    await import('pdfjs-dist/legacy/build/pdf.worker.mjs');
    return import('pdf-parse');
  });
  return pdfParseModule;
}

// When pdf.js loads it looks for @napi-rs/canvas to polyfill DOMMatrix, ImageData and Path2D, and logs
// a "Warning: ..." for each it cannot find. They are always missing in the compiled binary and only
// rendering needs them, so those lines would tell an operator that something is broken when it is not.
const CANVAS_WARNING = /^Warning: (Cannot load "@napi-rs\/canvas"|Cannot polyfill `)/;

async function withoutCanvasWarnings<T>(load: () => Promise<T>): Promise<T> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && CANVAS_WARNING.test(args[0])) return;
    warn.apply(console, args);
  };
  try {
    return await load();
  } finally {
    console.warn = warn;
  }
}

/**
 * Pages read per getText call: the text limit and the memory budget are checked between them, so a huge
 * PDF stops early.
 */
const PAGES_PER_STEP = 16;

export async function parsePdf(bytes: Uint8Array, limits: FileLimits): Promise<ParsedDocument> {
  checkPlainPageObjects(bytes, limits);
  const { PDFParse } = await loadPdfParse();
  const parser = new PDFParse({
    data: bytes,
    // Never compile font programs with eval: PDFs come from anywhere.
    isEvalSupported: false,
    useSystemFonts: false,
  });
  try {
    await checkPageCount(parser, limits);
    const sections = await pdfPages(parser, limits);
    const title = await pdfTitle(parser);
    return title ? { title, sections } : { sections };
  } catch (error) {
    throw toParseError(error);
  } finally {
    await parser.destroy().catch(() => undefined);
  }
}

/** A name that ends a PDF name token: whitespace or a delimiter (PDF 32000-1, 7.2.2). */
const PLAIN_PAGE_OBJECT = /\/Type\s*\/Page(?=[\s/<>[\]()%{}])/g;
/** The bytes scanned at once, and how far each scan reaches into the next (a match is at most this long). */
const SCAN_STEP = 1024 * 1024;
const SCAN_OVERLAP = 64;

/**
 * Refuses a PDF whose bytes hold more page objects written plainly (`/Type /Page`) than the page budget,
 * before pdf.js sees it. pdf.js cannot be asked for the page count alone: opening a document fetches its
 * last page, which walks the page tree up to it, and for the 100,000 pages of issue 22 (a flat tree, 27 MB)
 * that took 1.8 s and 600 MB before the count could be looked at. The scan takes a fraction of that and no
 * more memory than a megabyte of text. Page objects inside compressed object streams, or named with
 * #-escapes, are not seen here: checkPageCount, from pdf.js's count, still refuses those files. An old
 * revision of a page (an incremental update) is counted again, so the reason says "page objects".
 */
function checkPlainPageObjects(bytes: Uint8Array, limits: FileLimits): void {
  const max = limits.maxPages;
  if (max === undefined || !Number.isFinite(max)) return;
  const decoder = new TextDecoder('latin1');
  let count = 0;
  for (let start = 0; start < bytes.length; start += SCAN_STEP) {
    const text = decoder.decode(bytes.subarray(start, Math.min(bytes.length, start + SCAN_STEP + SCAN_OVERLAP)));
    // A match that starts in the overlap is the next step's.
    for (const match of text.matchAll(PLAIN_PAGE_OBJECT)) if (match.index < SCAN_STEP) count++;
  }
  if (count > max) {
    throw new ParseError('too_many_pages', `the PDF holds ${count} page objects, more than the ${max} pages a file may have: not parsed`);
  }
}

/** The page count as the document declares it (pdf-parse loads the document, not a page). */
interface LoadedDocument {
  numPages: number;
}

/**
 * Refuses a PDF with more pages than the budget before any page's text is read. pdf.js takes the count from
 * the page tree's root (`/Count`; opening the document has fetched the last page, see above); reading pages
 * goes no further than that count either, so a file that declares fewer pages than it holds is read only as
 * far as it declares.
 *
 * pdf-parse's `load` (which opens the document once and keeps it for getText) is private in its types,
 * hence the cast; a pdf-parse without it fails this file's parse, and test/security/ingestion-page-budget
 * fails with it.
 */
async function checkPageCount(parser: InstanceType<PdfParseModule['PDFParse']>, limits: FileLimits): Promise<void> {
  const max = limits.maxPages;
  if (max === undefined || !Number.isFinite(max)) return;
  const doc = await (parser as unknown as { load(): Promise<LoadedDocument> }).load();
  if (doc.numPages > max) throw tooManyPages(doc.numPages, max);
}

/**
 * The text of every page, a few pages at a time: compressed content streams can hold far more text than
 * the file's size suggests, and reading stops as soon as SVC_MAX_TEXT_MB is passed.
 */
async function pdfPages(parser: InstanceType<PdfParseModule['PDFParse']>, limits: FileLimits): Promise<ParsedSection[]> {
  const sections: ParsedSection[] = [];
  let textBytes = 0;
  let total = Infinity;
  for (let first = 1; first <= total; first += PAGES_PER_STEP) {
    // `first` and `last` together select the inclusive range first..last (pdf-parse's ParseParameters).
    const result = await parser.getText({ first, last: first + PAGES_PER_STEP - 1 });
    total = result.total;
    for (const page of result.pages) {
      textBytes += utf8Bytes(page.text);
      if (textBytes > limits.maxTextBytes) throw textTooLarge(textBytes, limits, page.num < total);
      sections.push({ text: page.text, page: page.num });
    }
    checkMemory(limits);
  }
  return sections;
}

async function pdfTitle(parser: InstanceType<PdfParseModule['PDFParse']>): Promise<string | undefined> {
  // The title is a nicety: a broken Info dictionary must not fail a PDF whose text was read.
  try {
    const info: unknown = (await parser.getInfo()).info;
    if (typeof info !== 'object' || info === null || !('Title' in info)) return undefined;
    const title = info.Title;
    return typeof title === 'string' && title.trim() ? title.trim() : undefined;
  } catch {
    return undefined;
  }
}

function toParseError(error: unknown): ParseError {
  if (error instanceof ParseError) return error;
  const name = error instanceof Error ? error.name : '';
  const message = errorMessage(error).trim() || 'unknown error';
  if (name === 'PasswordException') return new ParseError('encrypted', 'PDF is password-protected');
  return new ParseError('damaged', `PDF is damaged: ${message}`);
}
