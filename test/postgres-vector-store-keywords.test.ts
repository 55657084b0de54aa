/**
 * The PostgreSQL store on a real server without pgvector (Debian 12's PostgreSQL, a private cluster per
 * test file: test/helpers/postgres.ts), as cluster mode runs where the server lacks it: keywords are
 * indexed and searched exactly as the SQLite store does (BM25 the same number), while vector and hybrid
 * searches and vector writes fail with an error that says why. Two stores on two pools stand for two
 * replicas writing, collecting and starting one dataset at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { calibrationFor } from '../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { PgvectorMissingError } from '../src/vectors/postgres/pgvector.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import type { ChunkSource, ChunkText, SearchOptions, VectorStore } from '../src/vectors/store.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';

const DIMENSION = 8;
const dataDir = mkdtempSync(join(tmpdir(), 'knode-pg-keywords-'));
let server: PrivatePostgres;
let replicaA: OpenedPostgres;
let replicaB: OpenedPostgres;
let storeA: PostgresVectorStore;
let storeB: PostgresVectorStore;
let opened: OpenedDatabase;
let sqliteStore: SqliteVectorStore;

beforeAll(async () => {
  server = await startPostgres();
  replicaA = await openPostgresDatabase(server.url);
  replicaB = await openPostgresDatabase(server.url);
  [storeA, storeB] = await Promise.all([PostgresVectorStore.open(replicaA.db), PostgresVectorStore.open(replicaB.db)]);
  opened = await openDatabase(dataDir, [vectorExtensionPath()]);
  sqliteStore = new SqliteVectorStore(opened);
});

afterAll(async () => {
  await storeA?.close();
  await storeB?.close();
  await sqliteStore?.close();
  await replicaA?.close();
  await replicaB?.close();
  await opened?.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const keyword = (limit = 10): SearchOptions => ({
  mode: 'keyword',
  limit,
  similarityThreshold: 0,
  includeMetadata: true,
  calibration: calibrationFor('use-lite'),
});

function chunks(texts: readonly string[], metadata: Record<string, unknown> = {}): ChunkSource {
  return {
    count: texts.length,
    chunk: (index): ChunkText => ({ content: texts[index] as string, metadata: { chunk_index: index, ...metadata } }),
  };
}

async function write(store: VectorStore, id: string, fileKey: string, source: ChunkSource): Promise<void> {
  expect(await store.publish(await store.stage(id, fileKey, source))).toBe(true);
}

async function count(text: string): Promise<number> {
  const { rows } = await sql.raw<{ n: number }>(text).execute(replicaA.db);
  return Number(rows[0]?.n);
}

describe('a server without pgvector', () => {
  test('is told apart: the store opens, and says why vectors are missing', () => {
    expect(storeA.vectorsMissing).toMatch(/not installed/);
    expect(storeA.pgvectorVersion).toBeUndefined();
  });

  test('a dataset gets its keyword tables, no vector table, and its files are searched by keywords', async () => {
    const id = crypto.randomUUID();
    await storeA.createDatasetIndex(id, DIMENSION);
    const hex = id.replaceAll('-', '');
    expect(await count(`SELECT count(*) AS n FROM pg_tables WHERE tablename LIKE '%${hex}'`)).toBe(3);
    await write(
      storeA,
      id,
      'pets/cats.md',
      chunks(['Cats purr when they are content.', 'A kitten plays with yarn.'], { title: 'Felines' }),
    );
    await write(storeA, id, 'finance.md', chunks(['Stock markets fell as rates rose.']));
    const hits = await storeA.search(id, undefined, 'How do felines purr?', keyword());
    // Both chunks: one by its text, the other by its document's title and lead.
    expect(hits.map((hit) => hit.content).sort()).toEqual(['A kitten plays with yarn.', 'Cats purr when they are content.']);
    const cats = (await storeA.search(id, undefined, 'cats', keyword())).find((hit) => hit.content.startsWith('Cats'));
    expect(cats?.metadata).toEqual({ chunk_index: 0, title: 'Felines' });
    expect(await storeA.diskUse(id)).toBeGreaterThan(0);
  });

  test('vector and hybrid searches, and writing vectors, fail saying the server lacks pgvector', async () => {
    const id = crypto.randomUUID();
    await storeA.createDatasetIndex(id, DIMENSION);
    await write(storeA, id, 'a.md', chunks(['alpha beta']));
    const vector = new Float32Array(DIMENSION).fill(0.5);
    for (const mode of ['vector', 'hybrid'] as const) {
      const search = storeA.search(id, vector, 'alpha', { ...keyword(), mode });
      await expect(search).rejects.toThrow(PgvectorMissingError);
      await expect(search).rejects.toThrow('this PostgreSQL server lacks the pgvector extension');
      await expect(storeA.candidates(id, vector, 'alpha', mode, 10)).rejects.toThrow(PgvectorMissingError);
    }
    await expect(storeA.addVectorsOf(id, [{ fileKey: 'a.md', from: 1, vectors: [[vector]] }])).rejects.toThrow(PgvectorMissingError);
    const withVector = { count: 1, chunk: () => ({ content: 'x', metadata: {}, embedding: vector }) };
    await expect(storeA.stage(id, 'b.md', withVector).then((staged) => storeA.publish(staged))).rejects.toThrow(PgvectorMissingError);
  });
});

describe('keyword search on a real server', () => {
  test('gives the SQLite store’s candidates and answers, BM25 the same number, after replacements and deletions are collected', async () => {
    const id = crypto.randomUUID();
    const words = 'river bank money stream fish loans boat interest water rates running runs ran café naïve'.split(' ');
    let state = 11;
    const random = () => {
      state = (state * 16807) % 2147483647;
      return state / 2147483647;
    };
    const text = (length: number) => Array.from({ length }, () => words[Math.floor(random() * words.length)]).join(' ');
    const files = Array.from({ length: 30 }, (_, file) => ({
      fileKey: `folder_${file % 3}/doc-${file}.txt`,
      texts: Array.from({ length: 1 + (file % 4) }, () => text(3 + Math.floor(random() * 30))),
      title: text(2),
    }));
    const replacement = [text(12), text(5)];
    for (const store of [sqliteStore, storeA] as const) {
      await store.createDatasetIndex(id, DIMENSION);
      for (const { fileKey, texts, title } of files) await write(store, id, fileKey, chunks(texts, { title }));
      await write(store, id, (files[2] as (typeof files)[number]).fileKey, chunks(replacement));
      await store.retireFile(id, (files[5] as (typeof files)[number]).fileKey);
    }
    // Hidden rows count for BM25 until they are collected (as in FTS5); each store collects in the background, so both are waited for.
    await Promise.all([sqliteStore.collectGarbage(), storeA.collectGarbage()]);
    for (let query = 0; query < 25; query++) {
      const asked = `${text(1 + (query % 4))}${query % 6 === 0 ? ' the and unknownword' : ''}`;
      const expected = await sqliteStore.candidates(id, undefined, asked, 'keyword', 10);
      expect(await storeA.candidates(id, undefined, asked, 'keyword', 10)).toEqual(expected);
      // Document ids aside (made at random for chunks that come without one), the very same answers.
      const answers = async (store: VectorStore) =>
        (await store.search(id, undefined, asked, keyword(5))).map(({ document_id: _, ...hit }) => hit);
      expect(await answers(storeA)).toEqual(await answers(sqliteStore));
    }
  });

  test('in a large dataset leaves out words found in more than half of the chunks, and counts stems, not spellings', async () => {
    const id = crypto.randomUUID();
    await storeA.createDatasetIndex(id, DIMENSION);
    for (let file = 0; file < 20; file++) {
      const texts = Array.from({ length: 500 }, (_, i) => {
        const n = file * 500 + i;
        const extra = i === 0 ? '' : n < 4 ? ' zebra' : n === 4 ? ' zebras running' : n % 3 === 0 ? ' medium' : '';
        return `common filler ${n}${extra}`;
      });
      await write(storeA, id, `file-${file}.txt`, chunks(texts));
    }
    const large = { ...keyword(50) };
    expect((await storeA.search(id, undefined, 'Zebras COMMON', large)).map((hit) => hit.content).sort()).toEqual([
      'common filler 1 zebra',
      'common filler 2 zebra',
      'common filler 3 zebra',
      'common filler 4 zebras running',
    ]);
    expect(await storeA.search(id, undefined, 'common filler', large)).toEqual([]);
    expect((await storeA.search(id, undefined, 'medium', large)).length).toBe(50);
    expect(await storeA.search(id, undefined, 'run', large)).toHaveLength(1);
  }, 120_000);
});

describe('two replicas on one dataset', () => {
  test('start it at once, write its files at once and collect its garbage at once: no deadlock, and every count holds', async () => {
    const id = crypto.randomUUID();
    await Promise.all([storeA.createDatasetIndex(id, DIMENSION), storeB.createDatasetIndex(id, DIMENSION)]);
    const texts = (word: string, n: number) => Array.from({ length: n }, (_, i) => `${word} ${i} shared words here`);
    await Promise.all([
      write(storeA, id, 'a.txt', chunks(texts('apple', 400))),
      write(storeB, id, 'b.txt', chunks(texts('banana', 400))),
      write(storeA, id, 'c.txt', chunks(texts('cherry', 30))),
    ]);
    await Promise.all([
      write(storeB, id, 'a.txt', chunks(texts('apricot', 300))),
      write(storeA, id, 'b.txt', chunks(texts('blueberry', 300))),
      storeB.retireFile(id, 'c.txt'),
    ]);
    await Promise.all([storeA.collectGarbage(), storeB.collectGarbage(), storeA.collectGarbage()]);
    const hex = id.replaceAll('-', '');
    expect(await count(`SELECT count(*) AS n FROM vector_chunks_${hex}`)).toBe(600);
    expect(await count(`SELECT count(*) AS n FROM vector_sets WHERE dataset_id = '${id}'`)).toBe(2);
    expect(await count(`SELECT keyword_rows AS n FROM vector_indexes WHERE dataset_id = '${id}'`)).toBe(600);
    expect(await count(`SELECT chunk_count AS n FROM vector_indexes WHERE dataset_id = '${id}'`)).toBe(600);
    expect(
      await count(
        `SELECT count(*) AS n FROM (SELECT term, sum(cardinality(offsets)) AS c FROM vector_postings_${hex} GROUP BY term) p ` +
          `FULL JOIN vector_terms_${hex} t USING (term) WHERE p.c IS DISTINCT FROM t.chunks`,
      ),
    ).toBe(0);
    const [fromA, fromB] = await Promise.all([
      storeA.search(id, undefined, 'apricot blueberry shared', keyword(5)),
      storeB.search(id, undefined, 'apricot blueberry shared', keyword(5)),
    ]);
    expect(fromA).toEqual(fromB);
  }, 60_000);
});
