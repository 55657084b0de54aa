/**
 * Issue 27, item 2: read-excel-file returns a sheet as a dense grid, every row padded to the furthest
 * column. A sheet of two cells, A1 and XFD1048576, is a few hundred bytes of XML and a grid of 17 billion
 * cells: the parse thread would die allocating it. The grid is measured from the cells' addresses before
 * the sheet is read (parsers/xlsx.ts, MAX_GRID_CELLS), and such a workbook is refused with the reason.
 */
import { describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildXlsx } from '../fixtures/make-spreadsheets.ts';
import { hostileFilesThroughTheParseThread } from '../helpers/hostile-files.ts';

const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';

function sheetXml(cells: readonly [ref: string, row: number][]): string {
  const rows = cells.map(([ref, row]) => `<row r="${row}"><c r="${ref}"><v>1</v></c></row>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="${MAIN}"><sheetData>${rows}</sheetData></worksheet>`;
}

describe('XLSX sparse grid', () => {
  const files = hostileFilesThroughTheParseThread('knode-xlsx-grid-', {
    chunkOverlap: 0,
    maxFileBytes: 100 * 1024 * 1024,
    maxTextBytes: 20 * 1024 * 1024,
  });
  const { prepare } = files;

  test('two cells at opposite corners of a sheet are refused before the sheet is read', async () => {
    const far = sheetXml([
      ['A1', 1],
      ['XFD1048576', 1_048_576],
    ]);
    writeFileSync(
      join(files.folder, 'corners.xlsx'),
      await buildXlsx([{ name: 'Corners', rows: [] }], { 'xl/worksheets/sheet1.xml': far }),
    );
    const started = performance.now();
    await expect(prepare('corners.xlsx')).rejects.toMatchObject({
      code: 'too_large',
      message:
        "the XLSX sheet 'xl/worksheets/sheet1.xml' spans 1048576 rows by 16384 columns, more than the 5,000,000 cells a workbook may have: not read",
    });
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 30_000);

  test('the grids of all sheets add up: many sheets just under the limit are refused together', async () => {
    const sheets = Array.from({ length: 3 }, (_, i) => ({ name: `S${i + 1}`, rows: [] }));
    // 2,000,000 cells each (row 100,000 × column T): 6,000,000 together.
    const part = sheetXml([
      ['A1', 1],
      ['T100000', 100_000],
    ]);
    const parts = Object.fromEntries(sheets.map((_, i) => [`xl/worksheets/sheet${i + 1}.xml`, part]));
    writeFileSync(join(files.folder, 'three.xlsx'), await buildXlsx(sheets, parts));
    await expect(prepare('three.xlsx')).rejects.toMatchObject({ code: 'too_large' });
  }, 30_000);

  test('a real sparse sheet (a note far below the table) is read, its rows numbered as the sheet shows them', async () => {
    const part = sheetXml([
      ['A1', 1],
      ['A2', 2],
      ['E20000', 20_000],
    ]);
    writeFileSync(join(files.folder, 'sparse.xlsx'), await buildXlsx([{ name: 'Sparse', rows: [] }], { 'xl/worksheets/sheet1.xml': part }));
    const prepared = await prepare('sparse.xlsx');
    expect(prepared.chunks.map((chunk) => [chunk.text, chunk.location?.rows])).toEqual([['Sheet: Sparse\n1: 1\nColumn E: 1', '2-20000']]);
  }, 30_000);
});
