/**
 * Finding 3 (sizes): no limit on file size or inflated size, so one file held gigabytes of memory, and
 * random bytes in a .txt were indexed as junk. Each file here must fail, with a reason that says why.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeDocxBomb } from '../fixtures/zip-bomb.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { Dataset } from '../helpers/datasets.ts';

const MB = 1024 * 1024;

describe('ingestion limits', () => {
  let t: TestApp;
  let owner: TestUser;
  let folder: string;
  let dataset: Dataset;

  beforeAll(async () => {
    // Small limits keep the files small; the rules are the same at 100 MB and 20 MB.
    t = await createTestApp({ SVC_MAX_FILE_MB: '2', SVC_MAX_TEXT_MB: '1' });
    owner = await t.user('limits-owner');
    folder = join(t.dataDir, 'limits');
    mkdirSync(folder);
    writeFileSync(join(folder, 'normal.txt'), 'An ordinary note about tides, indexed as usual.');
    dataset = await Dataset.create(t, owner, folder);
    expect(await dataset.settledFile('normal.txt')).toMatchObject({ status: 'indexed', error: null });
  });

  afterAll(() => t.close());

  test('a file larger than SVC_MAX_FILE_MB fails with the reason', async () => {
    writeFileSync(join(folder, 'huge.txt'), 'word '.repeat((2.5 * MB) / 5));
    const file = await dataset.settledFile('huge.txt');
    expect(file).toMatchObject({ status: 'failed', chunks: 0, error: 'file is 2.5 MB, larger than SVC_MAX_FILE_MB (2 MB)' });
  });

  test('a file yielding more text than SVC_MAX_TEXT_MB fails with the reason before it is chunked', async () => {
    writeFileSync(join(folder, 'long.txt'), 'word '.repeat((1.5 * MB) / 5));
    const file = await dataset.settledFile('long.txt');
    expect(file).toMatchObject({ status: 'failed', chunks: 0, error: 'the file holds 1.5 MB of text, more than SVC_MAX_TEXT_MB (1 MB)' });
  });

  test('a DOCX declaring 500 MB of XML is refused before it is inflated', async () => {
    const path = join(t.dataDir, 'bomb.docx');
    const size = await writeDocxBomb(path, { xmlBytes: 500 * MB });
    expect(size).toBeLessThan(MB); // about 500 KB: well under SVC_MAX_FILE_MB
    const rss = process.memoryUsage().rss;
    const started = performance.now();
    // Moved in whole, so the watcher never sees a half-written zip.
    writeFileSync(join(folder, 'bomb.docx'), await Bun.file(path).bytes());
    rmSync(path);
    const file = await dataset.settledFile('bomb.docx');
    expect(file).toMatchObject({
      status: 'failed',
      error: 'the DOCX declares 500.0 MB of XML, more than SVC_MAX_TEXT_MB (1 MB): not inflated',
    });
    // Inflating it took 2.5 GB and minutes; refusing it takes neither.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(process.memoryUsage().rss - rss).toBeLessThan(200 * MB);
  });

  test('a DOCX whose zip lies about its inflated size stops inflating at the declared size', async () => {
    const path = join(t.dataDir, 'liar.docx');
    await writeDocxBomb(path, { xmlBytes: 200 * MB, declaredBytes: 4000 });
    writeFileSync(join(folder, 'liar.docx'), await Bun.file(path).bytes());
    rmSync(path);
    const file = await dataset.settledFile('liar.docx');
    expect(file.status).toBe('failed');
    expect(file.error).toBe("DOCX is damaged: part 'word/document.xml' inflates to more than the 4000 bytes it declares");
  });

  test('random bytes in a .txt fail as binary', async () => {
    writeFileSync(join(folder, 'random.txt'), crypto.getRandomValues(new Uint8Array(64 * 1024)));
    const file = await dataset.settledFile('random.txt');
    expect(file).toMatchObject({ status: 'failed', chunks: 0, error: 'binary content, not text' });
    // A note with a few stray Latin-1 bytes is still text.
    writeFileSync(join(folder, 'latin1.txt'), Buffer.from('Caf\xe9 au lait, cr\xe8me br\xfbl\xe9e and a na\xefve r\xe9sum\xe9.', 'latin1'));
    expect(await dataset.settledFile('latin1.txt')).toMatchObject({ status: 'indexed', error: null });
  });

  test('each refused file is listed as failed with its reason, and the dataset keeps running', async () => {
    const view = await dataset.view();
    expect(view.status).toBe('running');
    expect(view.ingestion.files_failed).toBe(5);
    const failed = (await dataset.files()).filter((file) => file.status === 'failed');
    expect(failed.every((file) => typeof file.error === 'string' && file.error.length > 0)).toBe(true);
  });
});
