/**
 * Issue 27, item 2: an XLSX is a zip, like a DOCX, so the zip bomb that once took a DOCX to 500 MB of XML
 * works on it too, and so does a zip that lies about its sizes. The XLSX reader opens the zip the DOCX way
 * (parsers/docx-zip.ts): declared XML past SVC_MAX_TEXT_MB is refused before anything is inflated, and a
 * part that inflates past what it declares is stopped there. On the parse thread, as ingestion runs it.
 */
import { describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { declareSize } from '../fixtures/lying-zip.ts';
import { buildXlsx } from '../fixtures/make-spreadsheets.ts';
import { writeDocxBomb } from '../fixtures/zip-bomb.ts';
import { hostileFilesThroughTheParseThread } from '../helpers/hostile-files.ts';

const MB = 1024 * 1024;

describe('XLSX zip bombs', () => {
  const files = hostileFilesThroughTheParseThread('knode-xlsx-bomb-', { chunkOverlap: 0, maxFileBytes: 2 * MB, maxTextBytes: MB });
  const { prepare } = files;

  test('an XLSX declaring 500 MB of XML is refused before anything is inflated', async () => {
    // The same container as the DOCX bomb: 500 MB of XML in about 500 KB.
    const size = await writeDocxBomb(join(files.folder, 'bomb.xlsx'), { xmlBytes: 500 * MB });
    expect(size).toBeLessThan(MB);
    const started = performance.now();
    await expect(prepare('bomb.xlsx')).rejects.toMatchObject({
      code: 'too_large',
      message: 'the XLSX declares 500.0 MB of XML, more than SVC_MAX_TEXT_MB (1 MB): not inflated',
    });
    // Inflating it would take 2.5 GB and minutes; refusing it takes neither.
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 30_000);

  test('a sheet declaring 1,000 bytes that inflates to 2 MB is stopped past its 1,000 bytes', async () => {
    const cells = Array.from({ length: 50_000 }, () => ['the same words, compressed a thousand times over']);
    // 50,000 rows of about 40 bytes of XML each: 2 MB of sheet, more than SVC_MAX_TEXT_MB here, declared as 1,000 bytes.
    const honest = await buildXlsx([{ name: 'Lies', rows: [['Text'], ...cells] }]);
    writeFileSync(join(files.folder, 'lying.xlsx'), declareSize(honest, 'xl/worksheets/sheet1.xml', 1_000));
    await expect(prepare('lying.xlsx')).rejects.toMatchObject({
      code: 'damaged',
      message: "XLSX is damaged: part 'xl/worksheets/sheet1.xml' inflates to more than the 1000 bytes it declares",
    });
  }, 30_000);

  test('the same workbook, truthful and within the limits, is read', async () => {
    writeFileSync(join(files.folder, 'fine.xlsx'), await buildXlsx([{ name: 'Fine', rows: [['Text'], ['an honest row']] }]));
    const prepared = await prepare('fine.xlsx');
    expect(prepared.chunks).toEqual([
      { text: 'Sheet: Fine\nText: an honest row', location: { sheet: 'Fine', rows: '2-2' }, chunk_index: 0 },
    ]);
  }, 30_000);
});
