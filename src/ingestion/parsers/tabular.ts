import { type FileLimits, textTooLarge, utf8Bytes } from './limits.ts';
import type { ParsedSection, TableLocation } from './types.ts';

/**
 * How XLSX, CSV and JSON rows become text: one line per row, each cell written with its column's header,
 * `Name: Ada Lovelace | Year: 1843 | Field: mathematics`, empty cells left out; rows grouped into
 * sections of at most one chunk each, so no chunk holds half a row set without its location.
 *
 * Why a header with every cell, rather than a header line and then bare rows ("Ada Lovelace | 1843"):
 * a bare row means something only beside the header line, which the chunker keeps in the first chunk
 * alone, and an embedder does not line up columns: "1843" means nothing, "Year: 1843" is a fact it can
 * place. Keyword search gains too: a question naming a column ("year Ada Lovelace") finds the row by
 * both words. The cost is length (about twice the characters of a bare row), so fewer rows per chunk.
 * A row longer than a chunk still reads well where the chunker cuts it, since each piece keeps its
 * cells' names.
 */

/** Chunk size when the caller gives none (the dataset configuration's default, API-CONTRACT 4). */
const DEFAULT_CHUNK_SIZE = 1000;

/** What the tabular parsers are told besides the limits: the chunk size their row groups must fit. */
export interface TableOptions extends FileLimits {
  readonly chunkSize?: number;
}

/** The text a file produced so far, counted against SVC_MAX_TEXT_MB as it grows, so a huge table stops early. */
export class TextBudget {
  private used = 0;

  constructor(private readonly limits: FileLimits) {}

  spend(text: string): void {
    this.used += utf8Bytes(text) + 1;
    if (this.used > this.limits.maxTextBytes) throw textTooLarge(this.used, this.limits, true);
  }
}

/** A cell's text on one line: line breaks and runs of spaces inside a cell would split its row. */
export function cellText(value: string): string {
  return value.replace(/\s+/g, ' ').trim();
}

/** `Name: Ada | Year: 1843`, cells without a value left out; "" when the row has none. */
export function rowLine(cells: Iterable<readonly [header: string, value: string]>): string {
  const parts: string[] = [];
  for (const [header, value] of cells) {
    if (value === '') continue;
    parts.push(header === '' ? value : `${header}: ${value}`);
  }
  return parts.join(' | ');
}

/**
 * Lays one table's row lines into sections of at most `chunkSize` characters, each with the table's
 * location and the range of rows it holds. `heading` (an XLSX's "Sheet: People") starts every section,
 * so the sheet's name is searchable in each of its chunks.
 */
export class TableSections {
  private readonly chunkSize: number;
  private lines: string[] = [];
  private length = 0;
  private firstRow = 0;
  private lastRow = 0;

  constructor(
    private readonly out: ParsedSection[],
    private readonly budget: TextBudget,
    options: TableOptions,
    private readonly where: Omit<TableLocation, 'rows'> = {},
    private readonly heading = '',
  ) {
    this.chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  }

  /** Adds row `number`'s line (an empty line, a row without values, is counted but not written). */
  add(number: number, line: string): void {
    if (line === '') return;
    this.budget.spend(line);
    const start = this.lines.length === 0 ? this.heading.length : this.length + 1;
    if (this.lines.length > 0 && start + line.length > this.chunkSize) this.flush();
    if (this.lines.length === 0) {
      this.firstRow = number;
      this.length = this.heading.length;
    } else {
      this.length += 1;
    }
    this.lines.push(line);
    this.length += line.length;
    this.lastRow = number;
  }

  /** Ends the table: its last rows become a section. */
  finish(): void {
    this.flush();
  }

  private flush(): void {
    if (this.lines.length === 0) return;
    const text = this.heading + this.lines.join('\n');
    this.out.push({ text, location: { ...this.where, rows: `${this.firstRow}-${this.lastRow}` } });
    this.lines = [];
    this.length = 0;
  }
}

/**
 * A table given as rows of cell texts, its first row with any text the header: the XLSX sheet's and the
 * CSV's way. `rows[i]` is row `firstNumber + i`. Columns without a header are named by `unnamed`.
 */
export class HeaderedTable {
  private header: string[] | undefined;
  private headerNumber = 0;
  private rowsAdded = false;

  constructor(
    private readonly sections: TableSections,
    private readonly unnamed: (column: number) => string,
  ) {}

  add(number: number, cells: readonly string[]): void {
    if (this.header === undefined) {
      if (cells.every((cell) => cell === '')) return;
      this.header = cells.map((cell, column) => cell || this.unnamed(column));
      this.headerNumber = number;
      return;
    }
    const header = this.header;
    const named = cells.map((cell, column): [string, string] => [header[column] ?? this.unnamed(column), cell]);
    const line = rowLine(named);
    if (line !== '') this.rowsAdded = true;
    this.sections.add(number, line);
  }

  /** A table of a header alone still says what its columns are. */
  finish(): void {
    if (!this.rowsAdded && this.header !== undefined) this.sections.add(this.headerNumber, this.header.join(' | '));
    this.sections.finish();
  }
}
