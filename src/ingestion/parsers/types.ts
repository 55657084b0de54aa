/**
 * What every parser returns and the one error a parser throws. Both cross the parse-worker boundary
 * (structured clone), so they stay plain data: no methods on ParsedDocument, and ParseError is rebuilt
 * from its `code` and `message` on the other side.
 */

export interface ParsedSection {
  text: string;
  /** 1-based page number; only PDFs know pages. */
  page?: number;
  /** Where a section of a table is (tabular.ts): shown in each of its chunks' search metadata. */
  location?: TableLocation;
}

/**
 * A group of rows of a table: `rows` is "first-last", numbered as a spreadsheet program shows them (the
 * header is row 1 of a CSV; an XLSX keeps its own row numbers; a JSON array's items count from 1). Its
 * keys are those of the search hit's metadata, as they go on the wire (keyword-phase.ts spreads them in).
 */
export interface TableLocation {
  /** The XLSX sheet's name. */
  sheet?: string;
  /** The JSON path of the array whose items are the rows ("people", "data.items"); absent for a top-level array. */
  json_path?: string;
  rows: string;
}

export interface ParsedDocument {
  title?: string;
  /** One section per PDF page; one per group of rows of a table (XLSX, CSV, JSON); a single section otherwise. */
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
