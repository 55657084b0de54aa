/**
 * What every parser returns and the one error a parser throws. Both cross the parse-worker boundary
 * (structured clone), so they stay plain data: no methods on ParsedDocument, and ParseError is rebuilt
 * from its `code` and `message` on the other side.
 */

export interface ParsedSection {
  text: string;
  /** 1-based page number; only PDFs know pages. */
  page?: number;
}

export interface ParsedDocument {
  title?: string;
  /** One section per PDF page; a single section for every other format. */
  sections: ParsedSection[];
}

/**
 * Why a file could not be turned into text. The ingestion queue stores `message` as the file's `error`;
 * `code` lets it tell a vanished file (`not_found`) from a bad one without parsing the message.
 */
export type ParseErrorCode =
  | 'unsupported_type'
  | 'not_found'
  | 'unreadable'
  | 'damaged'
  | 'encrypted'
  | 'no_text'
  | 'timeout'
  | 'worker_crashed'
  /** Larger than SVC_MAX_FILE_MB, or more text than SVC_MAX_TEXT_MB. */
  | 'too_large'
  /** A PDF with more pages than a file may have (parser-pool.ts, the parse budget): refused before its pages are read. */
  | 'too_many_pages'
  /** The parse thread's heap grew past its budget while parsing this file; the thread was replaced. */
  | 'out_of_memory'
  /** A .txt or .md (or .html) file whose bytes are not text. */
  | 'binary'
  /** The file resolves (through a symbolic link) outside the dataset folder or the tenant's roots. */
  | 'outside_folder';

export class ParseError extends Error {
  override readonly name = 'ParseError';

  constructor(
    readonly code: ParseErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function isParseErrorCode(value: unknown): value is ParseErrorCode {
  return typeof value === 'string' && PARSE_ERROR_CODES.has(value);
}

const PARSE_ERROR_CODES: ReadonlySet<string> = new Set<ParseErrorCode>([
  'unsupported_type',
  'not_found',
  'unreadable',
  'damaged',
  'encrypted',
  'no_text',
  'timeout',
  'worker_crashed',
  'too_large',
  'too_many_pages',
  'out_of_memory',
  'binary',
  'outside_folder',
]);
