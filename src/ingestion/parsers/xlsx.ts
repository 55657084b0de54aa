import JSZip from 'jszip';
import readXlsxFile from 'read-excel-file/universal';
import { errorMessage } from '../../domain/errors.ts';
import { openOfficeZip } from './docx-zip.ts';
import { cellText, HeaderedTable, type TableOptions, TableSections, TextBudget } from './tabular.ts';
import { type ParsedDocument, type ParsedSection, ParseError } from './types.ts';

/**
 * XLSX workbooks with read-excel-file (maintained, MIT; SheetJS's `xlsx` on npm is stale at 0.18.5 with
 * open advisories, and exceljs pulls in archiver, tmp, unzipper and uuid for writing we never do). Each
 * sheet is a table (tabular.ts): its first row with text the header, every following row a line, every
 * section starting with the sheet's name.
 *
 * read-excel-file is never given the file as it came, for two reasons:
 * - its unzip (fflate) inflates every XML part at once, trusting the sizes the zip declares, and inflates
 *   large parts on worker threads of its own. So the zip is opened the way DOCX is (docx-zip.ts: declared
 *   XML past SVC_MAX_TEXT_MB refused before anything is inflated, each part inflated as a stream and
 *   stopped past its declared size), and its XML parts are handed over in a zip that stores them
 *   uncompressed, which fflate copies and never inflates;
 * - it returns every sheet as a dense grid, each row padded to the widest row: a 1 KB sheet with a cell in
 *   A1 and one in XFD1048576 would be 17 billion cells. The cells' own addresses say how large the grid
 *   will be, so it is measured first (sheetGrid) and a workbook past MAX_GRID_CELLS is refused unread.
 */

/**
 * The most cells (rows × columns of each sheet's grid, added up over the sheets) a workbook may span: about
 * 40 MB of the grid's slots. A dense sheet this large would need some 100 MB of XML, five times the default
 * SVC_MAX_TEXT_MB, so only sparse sheets with a cell far away ever meet it.
 */
const MAX_GRID_CELLS = 5_000_000;

export async function parseXlsx(bytes: Uint8Array, options: TableOptions): Promise<ParsedDocument> {
  const zip = await openOfficeZip(bytes, options, 'XLSX');
  // The workbook's own parts (xl/...): what read-excel-file reads; document properties are left zipped.
  const parts = zip.xmlParts.filter((name) => name.startsWith('xl/'));
  const repacked = new JSZip();
  let cells = 0;
  for (const name of parts) {
    const data = (await zip.read(name)) as Uint8Array;
    const grid = sheetGrid(new TextDecoder().decode(data));
    if (grid !== undefined) {
      cells += grid.rows * grid.columns;
      if (cells > MAX_GRID_CELLS) {
        throw new ParseError(
          'too_large',
          `the XLSX sheet '${name}' spans ${grid.rows} rows by ${grid.columns} columns, more than the ${MAX_GRID_CELLS.toLocaleString('en')} cells a workbook may have: not read`,
        );
      }
    }
    repacked.file(name, data);
  }
  const stored = await repacked.generateAsync({ type: 'uint8array', compression: 'STORE' });
  let sheets: Awaited<ReturnType<typeof readXlsxFile>>;
  try {
    sheets = await readXlsxFile(stored.buffer.slice(stored.byteOffset, stored.byteOffset + stored.byteLength) as ArrayBuffer);
  } catch (error) {
    throw new ParseError('damaged', `XLSX is damaged: ${errorMessage(error).trim() || 'unknown error'}`);
  }

  const sections: ParsedSection[] = [];
  const budget = new TextBudget(options);
  for (const { sheet, data } of sheets) {
    const table = new HeaderedTable(
      new TableSections(sections, budget, options, { sheet }, `Sheet: ${cellText(sheet)}\n`),
      (column) => `Column ${columnName(column)}`,
    );
    data.forEach((row, index) => {
      table.add(index + 1, row.map(cellValue));
    });
    table.finish();
  }
  return { sections };
}

/** A cell as a spreadsheet program shows it, roughly: numbers without float noise, dates as dates. */
export function cellValue(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return cellText(value);
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(15)));
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) return '';
    const iso = value.toISOString(); // read-excel-file makes dates in UTC
    if (iso.endsWith('T00:00:00.000Z')) return iso.slice(0, 10);
    return iso.slice(0, 19).replace('T', ' ');
  }
  return cellText(String(value));
}

/** "A", "Z", "AA": the column's letters, 0-based. */
export function columnName(column: number): string {
  let name = '';
  for (let n = column + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
}

// A cell's address (`<c r="XFD1048576"`, with or without a namespace prefix) and a row's opening tag.
const CELL_ADDRESS = /<(?:\w+:)?c\s[^>]*?\br=["']([A-Za-z]{1,3})(\d{1,7})["']/g;
const ROW_TAG = /<(?:\w+:)?row\b([^>]*)>/g;
const ROW_NUMBER = /\br=["'](\d{1,7})["']/;

/**
 * How large a grid read-excel-file will make of a sheet part (undefined for a part that is not a sheet):
 * as many rows as the highest row number (rows without a number follow the one before, so they count
 * one more each), as many columns as the furthest cell. One pass over the XML with linear expressions.
 */
export function sheetGrid(xml: string): { rows: number; columns: number } | undefined {
  if (!xml.includes('sheetData')) return undefined;
  let rows = 0;
  let unnumbered = 0;
  for (const match of xml.matchAll(ROW_TAG)) {
    const number = ROW_NUMBER.exec(match[1] ?? '')?.[1];
    if (number === undefined) unnumbered++;
    else rows = Math.max(rows, Number(number));
  }
  let columns = 0;
  for (const match of xml.matchAll(CELL_ADDRESS)) {
    rows = Math.max(rows, Number(match[2]));
    columns = Math.max(columns, columnNumber(match[1] ?? ''));
  }
  return { rows: rows + unnumbered, columns };
}

function columnNumber(letters: string): number {
  let number = 0;
  for (const letter of letters.toUpperCase()) number = number * 26 + (letter.charCodeAt(0) - 64);
  return number;
}
