/**
 * Issue 22, item 4 (memory): a hostile PDF took the parse thread up to 2 GB. Bun ignores a Worker's
 * `resourceLimits`, so the parse thread measures its own heap between pages and steps; one over the
 * budget (512 MB by default, parser-pool.ts says why) stops, its file fails with the reason, and the
 * thread is replaced. The budget is lowered here to 1 MB, less than any parse thread holds, so every
 * file parsed is over it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParserPool } from '../../src/ingestion/parser-pool.ts';
import { buildPdf, CONTENT } from '../fixtures/make-documents.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { type OwnEngine, ownEngine } from '../helpers/engine.ts';

describe('parse memory budget', () => {
  let t: TestApp;
  let owner: TestUser;
  let own: OwnEngine;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('memory-owner');
    own = await ownEngine(t, new ParserPool({ maxHeapBytes: 1024 * 1024 }));
  });

  afterAll(async () => {
    await own.close();
    await t.close();
  }, 30_000);

  test('a PDF parsed past the memory budget fails with the reason, and so does the next file on a new thread', async () => {
    const dataset = await own.dataset(owner, 'heavy');
    writeFileSync(join(dataset.folder, 'heavy.pdf'), buildPdf(CONTENT.pdfPages));
    const heavy = await dataset.settledFile('heavy.pdf');
    expect(heavy).toMatchObject({ status: 'failed', chunks: 0 });
    expect(heavy.error).toMatch(/^parsing held \d+\.\d MB of memory, more than the 1 MB a file may use: stopped$/);
    writeFileSync(join(dataset.folder, 'next.md'), '# Next\n\nA note parsed on the thread that replaced the first.');
    expect((await dataset.settledFile('next.md')).error).toMatch(/more than the 1 MB a file may use: stopped$/);
  }, 30_000);
});
