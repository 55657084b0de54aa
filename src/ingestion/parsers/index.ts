import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parseDocx } from './docx.ts';
import { parseHtml } from './html.ts';
import { parsePdf } from './pdf.ts';
import { parseMarkdown, parseText } from './text.ts';
import { ParseError, type ParsedDocument } from './types.ts';

export { ParseError, type ParseErrorCode, type ParsedDocument, type ParsedSection } from './types.ts';

type Parser = (bytes: Uint8Array) => ParsedDocument | Promise<ParsedDocument>;

const PARSERS: Readonly<Record<string, Parser>> = {
  pdf: parsePdf,
  docx: parseDocx,
  html: parseHtml,
  htm: parseHtml,
  txt: parseText,
  md: parseMarkdown,
  markdown: parseMarkdown,
};

/** Extensions (lower case, no dot) that parseFile understands. */
export const SUPPORTED_EXTENSIONS: readonly string[] = Object.freeze(Object.keys(PARSERS));

/** The lower-case extension without its dot ("" when there is none): the chunk's `file_type`. */
export function fileTypeOf(path: string): string {
  return extname(path).slice(1).toLowerCase();
}

/**
 * Reads and parses one file. Every failure is a ParseError whose message can be shown to the operator
 * as the file's `error`; sections without text (blank PDF pages) are dropped.
 */
export async function parseFile(path: string): Promise<ParsedDocument> {
  const type = fileTypeOf(path);
  const parser = PARSERS[type];
  if (!parser) {
    throw new ParseError('unsupported_type', type ? `unsupported file type ".${type}"` : 'file has no extension');
  }
  const bytes = await readBytes(path);
  const doc = await runParser(parser, bytes, type);
  const sections = doc.sections.filter((section) => section.text.trim() !== '');
  if (sections.length === 0) {
    throw new ParseError(
      'no_text',
      type === 'pdf' ? 'no text found in file (a scanned PDF needs OCR, which knode does not do)' : 'no text found in file',
    );
  }
  return doc.title === undefined ? { sections } : { title: doc.title, sections };
}

async function runParser(parser: Parser, bytes: Uint8Array, type: string): Promise<ParsedDocument> {
  try {
    return await parser(bytes);
  } catch (error) {
    if (error instanceof ParseError) throw error;
    // A library bug on one odd file must still end as that file's clear failure, not a crash.
    const message = error instanceof Error ? error.message : String(error);
    throw new ParseError('damaged', `${type.toUpperCase()} could not be parsed: ${message || 'unknown error'}`);
  }
}

async function readBytes(path: string): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ParseError('not_found', 'file not found');
    if (code === 'EISDIR') throw new ParseError('unreadable', 'path is a folder, not a file');
    if (code === 'EACCES' || code === 'EPERM') throw new ParseError('unreadable', 'permission denied reading file');
    throw new ParseError('unreadable', `file could not be read: ${(error as Error).message}`);
  }
}
