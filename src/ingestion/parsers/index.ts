import { extname } from 'node:path';
import { errorMessage } from '../../domain/errors.ts';
import { readFileLimited } from '../read-file.ts';
import { parseCsv } from './csv.ts';
import { parseDocx } from './docx.ts';
import { isSupportedExtension, type SupportedExtension } from './file-types.ts';
import { parseHtml } from './html.ts';
import { parseJson } from './json.ts';
import { NO_LIMITS, textTooLarge, utf8Bytes } from './limits.ts';
import { parsePdf } from './pdf.ts';
import type { TableOptions } from './tabular.ts';
import { parseMarkdown, parseText } from './text.ts';
import { type ParsedDocument, ParseError } from './types.ts';
import { parseXlsx } from './xlsx.ts';

export { SUPPORTED_EXTENSIONS } from './file-types.ts';
export { NO_LIMITS } from './limits.ts';
export { type ParsedDocument, ParseError, type ParseErrorCode } from './types.ts';

/**
 * What a parse is told: the limits, and the chunk size, which the tabular parsers (XLSX, CSV, JSON) lay
 * their rows out by so that a chunk holds whole rows (tabular.ts); the other parsers ignore it.
 */
export type ParseOptions = TableOptions;

/** Parsers that can stop early (PDF pages, DOCX parts, table rows) are handed the limits; the rest are checked after. */
type Parser = (bytes: Uint8Array, options: ParseOptions) => ParsedDocument | Promise<ParsedDocument>;

// Keyed by the supported types: a type in the list without a parser (or the reverse) does not compile.
const PARSERS: Readonly<Record<SupportedExtension, Parser>> = {
  pdf: parsePdf,
  docx: parseDocx,
  html: parseHtml,
  htm: parseHtml,
  txt: parseText,
  md: parseMarkdown,
  markdown: parseMarkdown,
  xlsx: parseXlsx,
  csv: parseCsv,
  json: parseJson,
};

/** The lower-case extension without its dot ("" when there is none): the chunk's `file_type`. */
export function fileTypeOf(path: string): string {
  return extname(path).slice(1).toLowerCase();
}

/**
 * Reads and parses one file. Every failure is a ParseError whose message can be shown to the operator
 * as the file's `error`; sections without text (blank PDF pages) are dropped. Without `limits` nothing
 * is limited: ingestion reads through prepareFile (parse-worker.ts), which always passes them.
 */
export async function parseFile(path: string, limits: ParseOptions = NO_LIMITS): Promise<ParsedDocument> {
  const parser = parserFor(path);
  return parseBytes(path, await readFileLimited(path, limits), limits, parser);
}

/** Parses bytes already read (ingestion reads them itself, see read-file.ts); `path` names the type. */
export async function parseBytes(path: string, bytes: Uint8Array, limits: ParseOptions, parser = parserFor(path)): Promise<ParsedDocument> {
  const type = fileTypeOf(path);
  const doc = await runParser(parser, bytes, limits, type);
  // Checked before chunking: a file past the limit never reaches the embedder.
  const textBytes = doc.sections.reduce((sum, section) => sum + utf8Bytes(section.text), 0);
  if (textBytes > limits.maxTextBytes) throw textTooLarge(textBytes, limits);
  const sections = doc.sections.filter((section) => section.text.trim() !== '');
  if (sections.length === 0) {
    throw new ParseError(
      'no_text',
      type === 'pdf' ? 'no text found in file (a scanned PDF needs OCR, which knode does not do)' : 'no text found in file',
    );
  }
  return doc.title === undefined ? { sections } : { title: doc.title, sections };
}

function parserFor(path: string): Parser {
  const type = fileTypeOf(path);
  if (!isSupportedExtension(type)) {
    throw new ParseError('unsupported_type', type ? `unsupported file type ".${type}"` : 'file has no extension');
  }
  return PARSERS[type];
}

async function runParser(parser: Parser, bytes: Uint8Array, limits: ParseOptions, type: string): Promise<ParsedDocument> {
  try {
    return await parser(bytes, limits);
  } catch (error) {
    if (error instanceof ParseError) throw error;
    // A library bug on one odd file must still end as that file's clear failure, not a crash.
    const message = errorMessage(error);
    throw new ParseError('damaged', `${type.toUpperCase()} could not be parsed: ${message || 'unknown error'}`);
  }
}
