import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeOpenAI } from './fakes/openai-server.ts';
import { CONTENT, makeDocuments } from './fixtures/make-documents.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';
import { engineSearch } from './helpers/test-engine.ts';
import { waitFor } from './helpers/wait.ts';

describe('local_file ingestion', () => {
  let t: TestApp;
  let user: TestUser;
  /** A running dataset of its own folder, to tell when watchers have caught up. */
  let control: Dataset;

  beforeAll(async () => {
    t = await createTestApp();
    user = await t.user('ingest');
    control = await Dataset.create(t, user);
  });
  afterAll(() => t.close());

  test('indexes every format, keeps pages and titles, and marks broken files failed with a reason', async () => {
    const folder = join(t.dataDir, 'formats');
    await makeDocuments(folder);
    const dataset = await Dataset.create(t, user, folder);
    const files = await dataset.settled();
    const byPath = new Map(files.map((file) => [file.path, file]));
    for (const path of ['report.pdf', 'blank-page.pdf', 'report.docx', 'page.html', 'notes.md', 'latin1.txt']) {
      expect(byPath.get(path)).toMatchObject({ status: 'indexed', error: null });
      expect(byPath.get(path)?.chunks).toBeGreaterThan(0);
    }
    for (const path of ['corrupt.pdf', 'corrupt.docx', 'empty.txt', 'blank.md', 'scanned.pdf']) {
      expect(byPath.get(path)).toMatchObject({ status: 'failed', chunks: 0 });
      expect(byPath.get(path)?.error).toEqual(expect.any(String));
    }
    expect(byPath.has('data.xyz')).toBe(false);

    const view = await dataset.view();
    expect(view.status).toBe('running');
    expect(view.ingestion).toMatchObject({ files_total: 11, files_indexed: 6, files_failed: 5, files_pending: 0 });

    const pdfHits = await dataset.search('bananas are yellow', { extras: { reference_options: { mode: 'keyword' } } });
    const banana = pdfHits.find((hit) => hit.content.includes('Bananas'));
    expect(banana?.metadata).toMatchObject({
      source: 'report.pdf',
      file_type: 'pdf',
      page: 2,
      title: CONTENT.pdfTitle,
      chunk_index: expect.any(Number),
    });
    const docxHits = await dataset.search('North 1200 revenue', { extras: { reference_options: { mode: 'keyword' } } });
    expect(docxHits.some((hit) => hit.metadata.source === 'report.docx' && hit.content.includes('1200'))).toBe(true);
    const htmlHits = await dataset.search('oranges');
    const html = htmlHits.find((hit) => hit.metadata.source === 'page.html');
    expect(html?.content).not.toContain(CONTENT.htmlScriptMarker);
    expect(html?.content).not.toContain(CONTENT.htmlStyleMarker);
  });

  test('follows edits, deletes, renames and nested folders; skips hidden files and other types', async () => {
    const folder = join(t.dataDir, 'live');
    mkdirSync(join(folder, 'nested/deeper'), { recursive: true });
    mkdirSync(join(folder, '.hidden-folder'), { recursive: true });
    writeFileSync(join(folder, 'a.txt'), 'Alpha document about glaciers and ice.');
    writeFileSync(join(folder, 'nested/deeper/b.md'), '# Deep\n\nA nested note about volcanoes.');
    writeFileSync(join(folder, '.secret.txt'), 'hidden text must never be indexed');
    writeFileSync(join(folder, '.hidden-folder/c.txt'), 'hidden folder text must never be indexed');
    writeFileSync(join(folder, 'image.png'), 'not a document');
    const dataset = await Dataset.create(t, user, folder);
    let files = await dataset.settled();
    expect(files.map((file) => file.path).sort()).toEqual(['a.txt', 'nested/deeper/b.md']);

    // Edit: the old text is gone from the index, the new one is there.
    writeFileSync(join(folder, 'a.txt'), 'Alpha document rewritten: now about deserts and sand dunes.');
    await waitFor(
      'the edit',
      async () => (await dataset.search('sand dunes', { extras: { reference_options: { mode: 'keyword' } } })).length > 0,
    );
    await dataset.settled();
    const all = (await dataset.search('glaciers deserts volcanoes')).map((hit) => hit.content).join(' ');
    expect(all).not.toContain('glaciers');

    // Rename: the old path disappears, the new one is indexed.
    renameSync(join(folder, 'a.txt'), join(folder, 'nested/renamed.txt'));
    files = await waitFor('the rename', async () => {
      const current = await dataset.settled();
      return current.some((file) => file.path === 'nested/renamed.txt' && file.status === 'indexed') ? current : undefined;
    });
    expect(files.find((file) => file.path === 'a.txt')?.status).toBe('removed');

    // Delete a file, then a whole folder.
    rmSync(join(folder, 'nested/renamed.txt'));
    rmSync(join(folder, 'nested'), { recursive: true });
    await waitFor('the deletions', async () => (await dataset.indexedSources()).length === 0);
    files = await dataset.settled();
    expect(files.filter((file) => file.status !== 'removed')).toEqual([]);
    expect((await dataset.view()).ingestion).toMatchObject({ files_total: 0, chunks: 0 });
  });

  test('a symbolic link inside the folder is not followed', async () => {
    const outside = tempDir('knode-outside-');
    writeFileSync(join(outside, 'private.txt'), 'private text outside the ingestion root');
    const folder = join(t.dataDir, 'links');
    mkdirSync(folder);
    writeFileSync(join(folder, 'own.txt'), 'the dataset own text');
    symlinkSync(join(outside, 'private.txt'), join(folder, 'link.txt'));
    const dataset = await Dataset.create(t, user, folder);
    await waitFor('own.txt', async () => (await dataset.files()).some((file) => file.path === 'own.txt' && file.status === 'indexed'));
    const contents = (await dataset.search('private text')).map((hit) => hit.content).join(' ');
    expect(contents).not.toContain('private text outside');
    rmSync(outside, { recursive: true, force: true });
  });

  test('a 20 MB text file is indexed', async () => {
    // The OpenAI-compatible test double embeds at once: this checks the pipeline, not USE-lite's speed on 20 MB.
    const fake = startFakeOpenAI({ embeddingDimensions: 64 });
    const folder = join(t.dataDir, 'big');
    mkdirSync(folder);
    const paragraph = 'The quick brown fox jumps over the lazy dog near the riverbank at dawn. ';
    // Just under SVC_MAX_TEXT_MB's default (20 MB): a file yielding more text fails with that reason.
    const body = `${paragraph.repeat(Math.floor((20 * 1024 * 1024 - 64) / paragraph.length))}UNIQUEMARKER at the very end.`;
    writeFileSync(join(folder, 'big.txt'), body);
    const dataset = await Dataset.create(t, user, folder, {
      chunkSize: 2000,
      chunkOverlap: 200,
      embedder: 'openai:fake-embed',
      base_url: fake.url,
    });
    const files = await dataset.settled();
    expect(files[0]).toMatchObject({ path: 'big.txt', status: 'indexed' });
    expect(files[0]?.chunks).toBeGreaterThanOrEqual(11_000);
    const hits = await dataset.search('UNIQUEMARKER', { extras: { reference_options: { mode: 'keyword' } }, limit: 1 });
    expect(hits[0]?.content).toContain('UNIQUEMARKER');
    await fake.close();
  }, 120_000);

  test('a file written while the first scan runs is indexed too', async () => {
    const folder = join(t.dataDir, 'during-scan');
    mkdirSync(folder);
    for (let i = 0; i < 200; i++) writeFileSync(join(folder, `note-${i}.txt`), `Note number ${i} about topic ${i % 7}.`);
    const creating = Dataset.create(t, user, folder);
    writeFileSync(join(folder, 'late.txt'), 'A late file about lighthouses.');
    const dataset = await creating;
    writeFileSync(join(folder, 'later.txt'), 'An even later file about submarines.');
    const files = await dataset.settled();
    expect(files.filter((file) => file.status === 'indexed')).toHaveLength(202);
  }, 120_000);

  test('stop pauses ingestion, start reconciles the folder, reindex redoes every file', async () => {
    const folder = join(t.dataDir, 'pausable');
    mkdirSync(folder);
    writeFileSync(join(folder, 'one.txt'), 'First file about comets.');
    const dataset = await Dataset.create(t, user, folder);
    await dataset.settled();
    const stop = await t.request({ method: 'POST', url: `/api/v1/datasets/${dataset.id}/stop`, token: user.token });
    expect(stop.json().status).toBe('stopped');
    writeFileSync(join(folder, 'two.txt'), 'Second file about asteroids.');
    await control.caughtUp();
    expect((await dataset.files()).map((file) => file.path)).toEqual(['one.txt']);
    // Searching a stopped dataset still works.
    expect((await dataset.search('comets')).length).toBeGreaterThan(0);
    expect((await t.request({ method: 'POST', url: `/api/v1/datasets/${dataset.id}/reindex`, token: user.token })).statusCode).toBe(409);
    const start = await t.request({ method: 'POST', url: `/api/v1/datasets/${dataset.id}/start`, token: user.token });
    expect(start.json().status).toBe('running');
    const files = await dataset.settled();
    expect(files.map((file) => file.path)).toEqual(['one.txt', 'two.txt']);
    const reindex = await t.request({ method: 'POST', url: `/api/v1/datasets/${dataset.id}/reindex`, token: user.token });
    expect(reindex.statusCode).toBe(202);
    await dataset.settled();
    expect((await dataset.view()).ingestion).toMatchObject({ files_indexed: 2 });
  });

  test('deleting a dataset drops its index', async () => {
    const folder = join(t.dataDir, 'doomed');
    mkdirSync(folder);
    writeFileSync(join(folder, 'x.txt'), 'Doomed text.');
    const dataset = await Dataset.create(t, user, folder);
    await dataset.settled();
    await t.request({ method: 'DELETE', url: `/api/v1/endpoints/${dataset.id.slice(0, 8)}-raw`, token: user.token });
    const response = await t.request({ method: 'DELETE', url: `/api/v1/datasets/${dataset.id}`, token: user.token });
    expect(response.statusCode).toBe(200);
    expect(await dataset.indexedSources()).toEqual([]);
    expect(await dataset.storedTables()).toEqual([]);
    writeFileSync(join(folder, 'y.txt'), 'Written after the delete.');
    await control.caughtUp();
    const rows = await t.services.database.db.selectFrom('dataset_files').selectAll().where('dataset_id', '=', dataset.id).execute();
    expect(rows).toEqual([]);
  });

  test('the files, reindex, stop and start routes answer 401 without a token and 404 for another tenant', async () => {
    const folder = join(t.dataDir, 'guarded');
    mkdirSync(folder);
    const dataset = await Dataset.create(t, user, folder);
    const stranger = await t.user('ingest-stranger');
    for (const [method, path] of [
      ['GET', 'files'],
      ['POST', 'reindex'],
      ['POST', 'stop'],
      ['POST', 'start'],
    ] as const) {
      const url = `/api/v1/datasets/${dataset.id}/${path}`;
      expect((await t.request({ method, url })).statusCode).toBe(401);
      expect((await t.request({ method, url, token: stranger.token })).statusCode).toBe(404);
    }
    expect(issueLocs(await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}/files?limit=0`, token: user.token }))).toEqual([
      'query.limit',
    ]);
    const page = await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}/files?limit=5`, token: user.token });
    expect(page.json()).toEqual({ items: [], total: 0, skip: 0, limit: 5 });
  });

  test('provisioners describe the local_file type, its embedder, the vector store, the ranking and its calibration', async () => {
    const response = await t.request({ method: 'GET', url: '/api/v1/datasets/provisioners/', token: user.token });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([
      {
        dtype: 'local_file',
        status: expect.any(String),
        message: expect.any(String),
        details: expect.objectContaining({
          embedder: 'use-lite',
          dimension: 512,
          vector_store: engineSearch.vectorStore,
          vector_store_version: engineSearch.vectorStoreVersion,
          ranking: expect.stringContaining('calibrated'),
          calibration: expect.stringContaining('use-lite'),
        }),
      },
    ]);
    expect((await t.request({ method: 'GET', url: '/api/v1/datasets/provisioners/' })).statusCode).toBe(401);
  });
});

describe('ingestion across a restart', () => {
  test('changes made while knode was stopped are caught when it starts again', async () => {
    const dataDir = tempDir();
    const folder = join(dataDir, 'restart');
    mkdirSync(folder);
    writeFileSync(join(folder, 'kept.txt'), 'A file that stays the same, about tulips.');
    writeFileSync(join(folder, 'edited.txt'), 'A file that will change, about roses.');
    writeFileSync(join(folder, 'deleted.txt'), 'A file that will be deleted, about daisies.');
    const first = await createTestApp({}, dataDir);
    const user = await first.user('restarter');
    const dataset = await Dataset.create(first, user, folder);
    await dataset.settled();
    const keptBefore = (await dataset.files()).find((file) => file.path === 'kept.txt');
    await first.close({ keepData: true });

    writeFileSync(join(folder, 'edited.txt'), 'A file that changed while knode was down, about orchids.');
    rmSync(join(folder, 'deleted.txt'));
    writeFileSync(join(folder, 'added.txt'), 'A file added while knode was down, about lilies.');

    const second = await createTestApp({}, dataDir);
    try {
      const again = new Dataset(second, user, dataset.id, folder);
      const files = await again.settled();
      // A file that failed shows its reason here.
      expect(Object.fromEntries(files.map((file) => [file.path, file.error ?? file.status]))).toEqual({
        'added.txt': 'indexed',
        'deleted.txt': 'removed',
        'edited.txt': 'indexed',
        'kept.txt': 'indexed',
      });
      // The unchanged file was not indexed again.
      expect(files.find((file) => file.path === 'kept.txt')?.updated_at).toBe(keptBefore?.updated_at);
      const contents = (await again.search('orchids roses', { extras: { reference_options: { mode: 'keyword' } } }))
        .map((hit) => hit.content)
        .join(' ');
      expect(contents).toContain('orchids');
      expect(contents).not.toContain('roses');
      // `running` is set once the reconciliation is queued, which can be a moment after the index settles.
      await waitFor('the dataset to be running', async () => (await again.view()).status === 'running');
    } finally {
      await second.close();
    }
  }, 60_000);
});
