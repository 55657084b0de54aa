/**
 * Issue 22, item 4 (pages): a 20 MB PDF of 100,000 pages held the only parse thread for 120 s and up to
 * 2 GB. A PDF of more pages than the budget (5,000 by default, parser-pool.ts says why) is refused before a
 * page of it is read, with a reason that says so: from its page objects counted in its bytes, or, where
 * they cannot be seen there, from pdf.js's page count (parsers/pdf.ts). The hostile PDFs here have tiny
 * pages, so they are small and quick to write; the budget counts pages, not bytes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MAX_PAGES, ParserPool } from '../../src/ingestion/parser-pool.ts';
import type { ParseError, ParseErrorCode } from '../../src/ingestion/parsers/types.ts';
import { buildPdf, CONTENT } from '../fixtures/make-documents.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { Dataset } from '../helpers/datasets.ts';

/** `count` pages of one short line each. */
function manyPages(count: number): Uint8Array {
  return buildPdf(Array.from({ length: count }, (_, i) => [`page ${i + 1}`]));
}

describe('PDF page budget', () => {
  let t: TestApp;
  let owner: TestUser;
  let dataset: Dataset;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('pages-owner');
    dataset = await Dataset.create(t, owner);
  });

  afterAll(() => t.close());

  test("a PDF of more pages than the budget fails with the reason; the dataset's other files are indexed", async () => {
    writeFileSync(join(dataset.folder, 'hostile.pdf'), manyPages(DEFAULT_MAX_PAGES + 1));
    writeFileSync(join(dataset.folder, 'note.txt'), 'An ordinary note about tides, indexed as usual.');
    expect(await dataset.settledFile('hostile.pdf')).toMatchObject({
      status: 'failed',
      chunks: 0,
      error: `the PDF holds ${DEFAULT_MAX_PAGES + 1} page objects, more than the ${DEFAULT_MAX_PAGES} pages a file may have: not parsed`,
    });
    expect((await dataset.settledFile('note.txt')).error).toBeNull();
  }, 30_000);

  test('a PDF of 100,000 pages is refused the same way', async () => {
    writeFileSync(join(dataset.folder, 'hundred-thousand.pdf'), manyPages(100_000));
    expect((await dataset.settledFile('hundred-thousand.pdf')).error).toBe(
      `the PDF holds 100000 page objects, more than the ${DEFAULT_MAX_PAGES} pages a file may have: not parsed`,
    );
  }, 30_000);

  test("the page budget is the pool's: lowered to two, it refuses three pages, counted in the bytes or by pdf.js", async () => {
    const folder = join(t.dataDir, 'lowered');
    const plain = join(folder, 'three.pdf');
    const escaped = join(folder, 'three-escaped.pdf');
    await Bun.write(plain, buildPdf(CONTENT.pdfPages));
    // Page objects the scan of the bytes does not see: pdf.js's count refuses the file instead.
    await Bun.write(escaped, buildPdf(CONTENT.pdfPages, { escapedPageType: true }));
    const options = { chunkSize: 1000, chunkOverlap: 0, knownHash: null, folder, roots: [folder], maxFileBytes: 1e8, maxTextBytes: 1e8 };
    const tight = new ParserPool({ maxPages: 2 });
    const enough = new ParserPool({ maxPages: 3 });
    const refusal = (path: string) =>
      tight.prepare(path, options).then(
        () => undefined,
        (error: ParseError) => error,
      );
    try {
      expect(await refusal(plain)).toMatchObject({
        code: 'too_many_pages' satisfies ParseErrorCode,
        message: 'the PDF holds 3 page objects, more than the 2 pages a file may have: not parsed',
      });
      expect(await refusal(escaped)).toMatchObject({
        code: 'too_many_pages' satisfies ParseErrorCode,
        message: 'the PDF has 3 pages, more than the 2 a file may have: not parsed',
      });
      for (const path of [plain, escaped])
        expect((await enough.prepare(path, options)).chunks.map((chunk) => chunk.page)).toEqual([1, 2, 3]);
    } finally {
      await Promise.all([tight.close(), enough.close()]);
    }
  }, 30_000);
});
