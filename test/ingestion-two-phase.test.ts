/**
 * Two-phase indexing: a file's chunks are keyword-searchable (`searchable`) before their vectors are made
 * (`indexed`), and restarts, edits, deletes and renames keep their guarantees in both phases.
 *
 * The embedder is the OpenAI-compatible test double, slowed down to one second per request of 64 chunks
 * while a test looks at a file waiting for its vectors; files have one chunk per line (chunkSize 100), so
 * a file of 640 lines waits ten seconds. The tests act as soon as the file is searchable, then let the
 * double answer at once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { Dataset, type FileState } from './helpers/datasets.ts';
import { stoppedDatabase } from './helpers/test-engine.ts';
import { waitFor } from './helpers/wait.ts';

const CHUNK_SIZE = 100;
const SLOW = { delayMs: 1000 };

/** `lines` lines of about 100 characters, each one chunk, each holding `word` and its number. */
function lines(word: string, count: number): string {
  return Array.from({ length: count }, (_, i) => `Line ${i} of a file about ${word}, marker${word}${i}.`.padEnd(CHUNK_SIZE - 1, '.')).join(
    '\n',
  );
}

const keyword = { extras: { reference_options: { mode: 'keyword' } } };
const vector = { extras: { reference_options: { mode: 'vector' } } };
const hybrid = { extras: { reference_options: { mode: 'hybrid' } } };

let fake: FakeOpenAIServer;

/** The chunks the double was asked to embed, in order (not the probe an embedder makes to learn the dimension). */
function embeddedTexts(): string[] {
  return fake.requests
    .filter((request) => request.path === '/v1/embeddings')
    .flatMap((request) => (request.body?.input as string[]) ?? [])
    .filter((text) => text.startsWith('Line '));
}

/** A running dataset on an empty folder, embedding with the double (loaded, so that slowing it down slows only the files). */
async function runningDataset(t: TestApp, user: TestUser, folder = join(t.dataDir, crypto.randomUUID())): Promise<Dataset> {
  mkdirSync(folder, { recursive: true });
  const dataset = await Dataset.create(t, user, folder, {
    embedder: 'openai:fake-embed',
    base_url: fake.url,
    chunkSize: CHUNK_SIZE,
    chunkOverlap: 0,
  });
  await dataset.until('running', (view) => view.status === 'running');
  return dataset;
}

async function searchableFile(dataset: Dataset, path: string): Promise<FileState> {
  return waitFor(`${path} to be searchable`, async () => {
    const file = await dataset.file(path);
    return file?.status === 'searchable' ? file : undefined;
  });
}

beforeAll(() => {
  fake = startFakeOpenAI({ embeddingDimensions: 8 });
});

afterEach(() => fake.behave({}));

afterAll(() => fake.close());

describe('two-phase indexing', () => {
  let t: TestApp;
  let user: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    user = await t.user('phases');
  });
  afterAll(() => t.close());

  test('a file is keyword-searchable before its vectors are made; every mode answers meanwhile', async () => {
    const dataset = await runningDataset(t, user);
    fake.behave(SLOW);
    writeFileSync(join(dataset.folder, 'tides.txt'), lines('tides', 640));
    const file = await searchableFile(dataset, 'tides.txt');
    expect(file).toMatchObject({ chunks: 640, error: null });
    expect(file.chunks_embedded).toBeLessThan(640);
    const view = await dataset.view();
    expect(view.ingestion).toMatchObject({ files_total: 1, files_searchable: 1, files_indexed: 0, files_pending: 1, chunks: 640 });
    expect(view.ingestion.chunks_embedded).toBeLessThan(640);

    // The last line is embedded last (chunks get their vectors in order): keyword and hybrid find it by its
    // words, vector mode does not see it yet, and nothing fails.
    const last = 'markertides639';
    expect((await dataset.search(last, keyword)).map((hit) => hit.content)).toEqual([expect.stringContaining(last)]);
    const [found] = await dataset.search(last, hybrid);
    expect(found?.content).toContain(last);
    expect(found?.similarity_score).toBeGreaterThan(0);
    expect((await dataset.search(last, vector)).some((hit) => hit.content.includes(last))).toBe(false);

    fake.behave({});
    const [indexed] = await dataset.indexed();
    expect(indexed).toMatchObject({ path: 'tides.txt', status: 'indexed', chunks: 640, chunks_embedded: 640 });
    expect((await dataset.view()).ingestion).toMatchObject({
      files_searchable: 1,
      files_indexed: 1,
      files_pending: 0,
      chunks: 640,
      chunks_embedded: 640,
    });
    expect(await dataset.storedVectors()).toBe(640);
    const text = lines('tides', 640).split('\n').at(-1) as string;
    expect((await dataset.search(text, { ...vector, limit: 1 }))[0]?.content).toBe(text);
  }, 30_000);

  test("an edit while the file waits for its vectors drops the old version's work; searches see one version, never a mix", async () => {
    const dataset = await runningDataset(t, user);
    fake.behave(SLOW);
    writeFileSync(join(dataset.folder, 'notes.txt'), lines('glaciers', 640));
    await searchableFile(dataset, 'notes.txt');
    writeFileSync(join(dataset.folder, 'notes.txt'), lines('volcanoes', 300));
    // Until the new version replaces the old one, and after, each search sees one version only.
    await waitFor('the new version to be searchable', async () => {
      const contents = (await dataset.search('glaciers volcanoes', { ...keyword, limit: 100 })).map((hit) => hit.content);
      const versions = new Set(contents.map((content) => (content.includes('glaciers') ? 'old' : 'new')));
      expect(versions.size).toBeLessThanOrEqual(1);
      return versions.has('new');
    });
    const oldEmbedded = embeddedTexts().filter((text) => text.includes('glaciers')).length;
    fake.behave({});
    const [file] = await dataset.indexed();
    expect(file).toMatchObject({ path: 'notes.txt', status: 'indexed', chunks: 300, chunks_embedded: 300 });
    // At most the request in flight when the edit was seen was still about the old version.
    expect(embeddedTexts().filter((text) => text.includes('glaciers')).length - oldEmbedded).toBeLessThanOrEqual(64);
    expect(embeddedTexts().filter((text) => text.includes('glaciers')).length).toBeLessThan(640);
    expect(await dataset.storedVectors()).toBe(300);
    expect(await dataset.search('glaciers', keyword)).toEqual([]);
  }, 30_000);

  test('deleting or renaming a file that waits for its vectors hides its chunks at once and stops its embedding', async () => {
    const dataset = await runningDataset(t, user);
    fake.behave(SLOW);
    writeFileSync(join(dataset.folder, 'asteroids.txt'), lines('asteroids', 640));
    writeFileSync(join(dataset.folder, 'comets.txt'), lines('comets', 200));
    await searchableFile(dataset, 'asteroids.txt');
    await searchableFile(dataset, 'comets.txt');
    rmSync(join(dataset.folder, 'asteroids.txt'));
    renameSync(join(dataset.folder, 'comets.txt'), join(dataset.folder, 'renamed.txt'));
    await waitFor('the delete and the rename', async () => {
      const files = await dataset.files();
      const status = Object.fromEntries(files.map((file) => [file.path, file.status]));
      const renamed = status['renamed.txt'];
      return (
        status['asteroids.txt'] === 'removed' && status['comets.txt'] === 'removed' && (renamed === 'searchable' || renamed === 'indexed')
      );
    });
    const afterDelete = embeddedTexts().filter((text) => text.includes('asteroids')).length;
    expect(await dataset.search('asteroids', keyword)).toEqual([]);
    const comets = await dataset.search('comets', { ...keyword, limit: 100 });
    expect(comets.length).toBeGreaterThan(0);
    expect(new Set(comets.map((hit) => hit.metadata.source))).toEqual(new Set(['renamed.txt']));
    fake.behave({});
    const files = await dataset.indexed();
    expect(files.filter((file) => file.status !== 'removed')).toMatchObject([{ path: 'renamed.txt', status: 'indexed', chunks: 200 }]);
    expect(embeddedTexts().filter((text) => text.includes('asteroids')).length - afterDelete).toBeLessThanOrEqual(64);
    expect(await dataset.storedVectors()).toBe(200);
    expect(await dataset.indexedSources()).toEqual(['renamed.txt']);
  }, 30_000);

  test('a file touched while it waits for its vectors stays searchable and gets them', async () => {
    const dataset = await runningDataset(t, user);
    fake.behave(SLOW);
    const path = join(dataset.folder, 'touched.txt');
    writeFileSync(path, lines('lagoons', 640));
    await searchableFile(dataset, 'touched.txt');
    const generation = () =>
      t.services.database.db
        .selectFrom('dataset_files')
        .select(['generation', 'status'])
        .where('dataset_id', '=', dataset.id)
        .where('path', '=', 'touched.txt')
        .executeTakeFirstOrThrow();
    const before = await generation();
    // Same content, new modification time: the hash says nothing changed, the chunks stand.
    writeFileSync(path, lines('lagoons', 640));
    await waitFor('the touch to be seen and settled', async () => {
      const now = await generation();
      return now.generation > before.generation && now.status === 'searchable';
    });
    fake.behave({});
    const [file] = await dataset.indexed();
    expect(file).toMatchObject({ status: 'indexed', chunks: 640, chunks_embedded: 640 });
    expect(await dataset.storedVectors()).toBe(640);
  }, 30_000);
});

describe('two-phase indexing across a restart', () => {
  test('a file waiting for its vectors stays searchable through a restart and its embedding resumes where it stopped', async () => {
    const dataDir = tempDir();
    const first = await createTestApp({}, dataDir);
    const user = await first.user('phases-restart');
    const dataset = await runningDataset(first, user, join(dataDir, 'docs'));
    fake.behave({ delayMs: 150 });
    writeFileSync(join(dataset.folder, 'long.txt'), lines('harbours', 1500));
    await waitFor('some of the vectors', async () => {
      const file = await dataset.file('long.txt');
      return file?.status === 'searchable' && file.chunks_embedded >= 256;
    });
    await first.close({ keepData: true });
    const beforeRestart = embeddedTexts().length;
    // What the vectors' record says when knode stopped (windows in flight then were dropped, not written).
    const stored = await stoppedDatabase(dataDir);
    const { embedded } = await stored.db
      .withTables<{ vector_sets: { embedded: number; file_key: string; state: string } }>()
      .selectFrom('vector_sets')
      .select('embedded')
      .where('file_key', '=', 'long.txt')
      .where('state', '=', 'visible')
      .executeTakeFirstOrThrow();
    await stored.close();
    expect(embedded).toBeGreaterThanOrEqual(256);
    fake.behave({});

    const second = await createTestApp({}, dataDir);
    try {
      const again = new Dataset(second, user, dataset.id, dataset.folder);
      const stopped = await again.file('long.txt');
      expect(stopped?.status).toBe('searchable');
      expect((await again.search('markerharbours1499', keyword)).length).toBe(1);
      const [file] = await again.indexed();
      expect(file).toMatchObject({ status: 'indexed', chunks: 1500, chunks_embedded: 1500 });
      // Resumed after the vectors written before the restart: no chunk that had its vector is embedded again.
      // (A request the first app sent just before it stopped may still be counted here: its chunks come after.)
      const resumed = embeddedTexts().slice(beforeRestart);
      const chunkIndexes = resumed.map((text) => Number(/markerharbours(\d+)\./.exec(text)?.[1]));
      expect(chunkIndexes.filter((index) => index < embedded)).toEqual([]);
      expect(await again.storedVectors()).toBe(1500);
      const firstLine = lines('harbours', 1).trimEnd();
      expect((await again.search(firstLine, { ...vector, limit: 1 }))[0]?.content).toBe(firstLine);
    } finally {
      await second.close();
    }
  }, 60_000);
});
