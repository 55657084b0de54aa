import { parse } from 'csv-parse/sync';
import { errorMessage } from '../../domain/errors.ts';
import { textTooLarge, utf8Bytes } from './limits.ts';
import { cellText, HeaderedTable, type TableOptions, TableSections, TextBudget } from './tabular.ts';
import { decodeTextFile } from './text.ts';
import { type ParsedDocument, type ParsedSection, ParseError } from './types.ts';

/**
 * CSV with csv-parse's synchronous API (on the parse thread, like every parser). Each record is laid out
 * as it is read (`on_record` returns null, so csv-parse keeps no array of records): memory holds the text
 * and the rows written so far, never a second copy of the table, and a file whose rows add up to more than
 * SVC_MAX_TEXT_MB stops at the row that crosses it.
 *
 * Rows are numbered as a spreadsheet program shows the file: the header is row 1 and an empty line is a
 * row too. A record spanning lines (a quoted line break) is one row.
 */

/** Delimiters a CSV file uses in practice; the one found most often in the first line wins. */
const DELIMITERS = [',', ';', '\t', '|'] as const;

export function parseCsv(bytes: Uint8Array, options: TableOptions): ParsedDocument {
  // A CSV is text: at least half its bytes (CRLF becomes LF) must fit SVC_MAX_TEXT_MB, checked before decoding.
  const least = Math.floor((bytes.length - 3) / 2);
  if (least > options.maxTextBytes) throw textTooLarge(least, options, true);
  const text = decodeTextFile(bytes);
  const size = utf8Bytes(text);
  if (size > options.maxTextBytes) throw textTooLarge(size, options);

  const sections: ParsedSection[] = [];
  const table = new HeaderedTable(new TableSections(sections, new TextBudget(options), options), (column) => `Column ${column + 1}`);
  try {
    parse(text, {
      delimiter: delimiterOf(text),
      // Ragged rows and stray quotes are common in exported files; a row is kept as it was written.
      relax_column_count: true,
      relax_quotes: true,
      on_record: (record: string[], context) => {
        table.add(context.records, record.map(cellText));
        return null;
      },
    });
  } catch (error) {
    if (error instanceof ParseError) throw error; // the text budget, with its own reason
    throw new ParseError('damaged', `CSV could not be parsed: ${errorMessage(error) || 'unknown error'}`);
  }
  table.finish();
  return { sections };
}

/** The delimiter counted most often in the first line, outside quotes; a comma when none is there. */
export function delimiterOf(text: string): string {
  const counts = new Map<string, number>();
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (char === '"') quoted = !quoted;
    else if (!quoted && char === '\n') break;
    else if (!quoted && (DELIMITERS as readonly string[]).includes(char)) counts.set(char, (counts.get(char) ?? 0) + 1);
  }
  let best: string = ',';
  for (const delimiter of DELIMITERS) if ((counts.get(delimiter) ?? 0) > (counts.get(best) ?? 0)) best = delimiter;
  return best;
}
