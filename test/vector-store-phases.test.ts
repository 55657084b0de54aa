/**
 * The vector store's two phases and short transactions (src/vectors/chunk-sets.ts): chunks written
 * without vectors are found by their keywords; a large file's new chunks are written hidden in many
 * small transactions and swapped in at once; replaced and deleted chunks are hidden at once and deleted
 * in batches; what a crash leaves half written is discarded.
 */

import { Database as SqliteDatabase } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { kyselyAdapter, type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { migrations } from '../src/db/migrations/index.ts';
import { nextTurn } from '../src/util/next-turn.ts';
import type { Calibration } from '../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import type { ChunkSource, ChunkText, SearchOptions } from '../src/vectors/store.ts';
import { createTablesSql, datasetTables } from '../src/vectors/tables.ts';
import { addVectors, deleteFileChunks, indexInfo, replaceFileChunks, unembedded } from './helpers/vector-store.ts';

const DIMENSION = 8;
const dataDir = mkdtempSync(join(tmpdir(), 'knode-vector-phases-'));
let opened: OpenedDatabase;
let store: SqliteVectorStore;

beforeAll(async () => {
  opened = await openDatabase(dataDir, [vectorExtensionPath()]);
  store = new SqliteVectorStore(opened);
});

afterAll(async () => {
  await opened.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const PLAIN: Calibration = {
  name: 'plain',
  keyword: { weights: { bm25: 1 }, intercept: 0 },
  vector: { weights: { cosine: 10 }, intercept: -5 },
  hybrid: { weights: { bm25: 1, cosine: 10 }, intercept: -5 },
};
const options = (mode: SearchOptions['mode'], limit = 20): SearchOptions => ({
  mode,
  limit,
  similarityThreshold: 0,
  includeMetadata: true,
  calibration: PLAIN,
});

function unit(axis: number): Float32Array {
  const vector = new Float32Array(DIMENSION);
  vector[axis % DIMENSION] = 1;
  return vector;
}

/** `count` chunks saying `word` (and their number), without vectors unless `vectors`. */
function source(word: string, count: number, vectors = false): ChunkSource {
  return {
    count,
    chunk: (index): ChunkText => ({
      content: `chunk ${index} about ${word}`,
      metadata: { source: `${word}.txt`, chunk_index: index },
      ...(vectors ? { embedding: unit(index) } : {}),
    }),
  };
}

async function newIndex(): Promise<string> {
  const id = crypto.randomUUID();
  await store.createDatasetIndex(id, DIMENSION);
  return id;
}

async function write(id: string, fileKey: string, chunks: ChunkSource): Promise<void> {
  expect(await store.publish(await store.stage(id, fileKey, chunks))).toBe(true);
}

async function sources(id: string, query: string, mode: SearchOptions['mode'] = 'keyword'): Promise<string[]> {
  const hits = await store.search(id, mode === 'keyword' ? undefined : unit(0), query, options(mode, 100));
  return [...new Set(hits.map((hit) => String(hit.content.split(' about ')[1])))].sort();
}

async function rows(id: string): Promise<number> {
  return opened.exclusive(
    (sqlite) => (sqlite.query('SELECT count(*) AS n FROM vector_chunks WHERE dataset_id = ?').get(id) as { n: number }).n,
  );
}

describe('chunks without vectors', () => {
  test('are found by their keywords in keyword and hybrid modes, not in vector mode, until their vectors are added', async () => {
    const id = await newIndex();
    await write(id, 'whales.txt', source('whales', 3));
    expect(await sources(id, 'whales', 'keyword')).toEqual(['whales']);
    expect(await sources(id, 'whales', 'vector')).toEqual([]);
    // Hybrid scores a chunk without a vector with the keyword model: the same score as keyword mode.
    const keywordHits = await store.search(id, undefined, 'whales', options('keyword'));
    const hybridHits = await store.search(id, unit(0), 'whales', options('hybrid'));
    expect(hybridHits.map((hit) => [hit.document_id, hit.similarity_score])).toEqual(
      keywordHits.map((hit) => [hit.document_id, hit.similarity_score]),
    );

    const waiting = await unembedded(store, id, 'whales.txt', undefined, { texts: 2, characters: 10_000 });
    expect(waiting?.rows.map((row) => row.content)).toEqual(['chunk 0 about whales', 'chunk 1 about whales']);
    expect(waiting?.last).toBe(false);
    expect(await store.filesToEmbed(id)).toEqual(['whales.txt']);
    const from = waiting?.from as number;
    expect(await addVectors(store, id, 'whales.txt', from, [unit(0), unit(1)])).toEqual({ embedded: 2, count: 3 });
    // Vectors go in order: the third chunk is the next one, not the first again.
    await expect(addVectors(store, id, 'whales.txt', from, [unit(0)])).rejects.toThrow(/in order/);
    expect((await store.search(id, unit(0), '', options('vector'))).map((hit) => hit.content)).toEqual([
      'chunk 0 about whales',
      'chunk 1 about whales',
    ]);
    const rest = await unembedded(store, id, 'whales.txt', undefined, { texts: 10, characters: 10_000 });
    expect(rest).toMatchObject({ from: from + 2, rows: [{ content: 'chunk 2 about whales' }], last: true });
    expect(await addVectors(store, id, 'whales.txt', from + 2, [unit(2)])).toEqual({ embedded: 3, count: 3 });
    expect(await store.filesToEmbed(id)).toEqual([]);
  });

  test('a window of several files is written in short transactions, each file keeping its own progress', async () => {
    const id = await newIndex();
    const files = { 'long.txt': 100, 'empty-tail.txt': 5, 'short.txt': 30 };
    for (const [name, count] of Object.entries(files)) await write(id, name, source(name.split('.')[0] as string, count));
    const waiting = await Promise.all(
      Object.keys(files).map((name) => unembedded(store, id, name, undefined, { texts: 1_000, characters: 1_000_000 })),
    );
    const parts = Object.entries(files).map(([fileKey, count], index) => ({
      fileKey,
      from: waiting[index]?.from as number,
      vectors: Array.from({ length: fileKey === 'empty-tail.txt' ? 0 : count }, (_, axis) => [unit(axis)]),
    }));
    // Between two transactions the event loop turns: a reader sees the long file half embedded.
    const seen = new Set<number>();
    let done = false;
    const writing = store.addVectorsOf(id, parts).finally(() => {
      done = true;
    });
    while (!done) {
      await nextTurn();
      seen.add(
        await opened.exclusive(
          (sqlite) =>
            (
              sqlite.query("SELECT embedded FROM vector_sets WHERE dataset_id = ? AND file_key = 'long.txt'").get(id) as {
                embedded: number;
              }
            ).embedded,
        ),
      );
    }
    expect([...seen].some((embedded) => embedded > 0 && embedded < 100)).toBe(true);
    expect(await writing).toEqual([
      { embedded: 100, count: 100 },
      { embedded: 0, count: 5 },
      { embedded: 30, count: 30 },
    ]);
    expect(await store.filesToEmbed(id)).toEqual(['empty-tail.txt']);
    expect((await store.search(id, unit(0), '', options('vector', 200))).length).toBe(130);
  });

  test('vectors of chunks that were replaced meanwhile are not written', async () => {
    const id = await newIndex();
    await write(id, 'a.txt', source('old', 2));
    const waiting = await unembedded(store, id, 'a.txt', undefined, { texts: 10, characters: 10_000 });
    await write(id, 'a.txt', source('new', 2));
    expect(await addVectors(store, id, 'a.txt', waiting?.from as number, [unit(0), unit(1)])).toBeUndefined();
    await store.retireFile(id, 'a.txt');
    expect(await unembedded(store, id, 'a.txt', undefined, { texts: 10, characters: 10_000 })).toBeUndefined();
  });
});

describe('a large file', () => {
  test('is written hidden and swapped in at once: searches see its old chunks or its new ones, never a mix', async () => {
    const id = await newIndex();
    await write(id, 'big.txt', source('alpha', 600));
    const staged = await store.stage(id, 'big.txt', source('omega', 1500));
    // Written (many transactions), not yet published: only the old chunks are found, in every mode.
    expect(await rows(id)).toBe(2100);
    expect(await sources(id, 'alpha omega')).toEqual(['alpha']);
    expect(await sources(id, 'alpha omega', 'hybrid')).toEqual(['alpha']);
    expect((await indexInfo(opened, id))?.chunkCount).toBe(600);
    expect(await store.publish(staged)).toBe(true);
    expect(await sources(id, 'alpha omega')).toEqual(['omega']);
    expect((await indexInfo(opened, id))?.chunkCount).toBe(1500);
    await store.collectGarbage();
    expect(await rows(id)).toBe(1500);
  });

  test('a write of 20,000 chunks lets searches run between its transactions, and they see the old chunks', async () => {
    const id = await newIndex();
    await write(id, 'huge.txt', source('before', 10, true));
    let done = false;
    const writing = replaceFileChunks(
      store,
      id,
      'huge.txt',
      Array.from({ length: 20_000 }, (_, index) => ({ content: `chunk ${index} about after`, metadata: {}, embedding: unit(index) })),
    ).then(() => {
      done = true;
    });
    await Bun.sleep(0);
    expect(await sources(id, 'before after', 'hybrid')).toEqual(['before']);
    expect(done).toBe(false);
    await writing;
    expect(await sources(id, 'before after', 'hybrid')).toEqual(['after']);
    expect(await rows(id)).toBe(20_000);
  }, 30_000);

  test('a vector search skips hidden chunks that have vectors already', async () => {
    const id = await newIndex();
    await write(id, 'kept.txt', source('kept', 3, true));
    // Written with their vectors (as replaceFileChunks does), not yet published: the vector index holds
    // 600 vectors no search may answer, many of them nearer to the query than the visible ones.
    const staged = await store.stage(id, 'hidden.txt', source('hidden', 600, true));
    const hits = await store.search(id, unit(0), '', options('vector', 5));
    expect(hits.map((hit) => hit.content).sort()).toEqual(['chunk 0 about kept', 'chunk 1 about kept', 'chunk 2 about kept']);
    expect(await sources(id, 'hidden kept', 'hybrid')).toEqual(['kept']);
    await store.discard(staged);
    // More hidden vectors than the vector index answers at once (4,096): every visible vector is compared.
    const many = await store.stage(id, 'many.txt', source('many', 5000, true));
    expect((await store.search(id, unit(0), '', options('vector', 5))).map((hit) => hit.content).sort()).toEqual([
      'chunk 0 about kept',
      'chunk 1 about kept',
      'chunk 2 about kept',
    ]);
    await store.discard(many);
    await store.collectGarbage();
    expect(await rows(id)).toBe(3);
  });

  test('deleted while its new chunks are written, the file is not brought back by them', async () => {
    const id = await newIndex();
    await write(id, 'gone.txt', source('first', 300));
    const staged = await store.stage(id, 'gone.txt', source('second', 600));
    expect(await deleteFileChunks(store, id, 'gone.txt')).toBe(300);
    expect(await store.publish(staged)).toBe(false);
    expect(await sources(id, 'first second')).toEqual([]);
    await store.discard(staged);
    await store.collectGarbage();
    expect(await rows(id)).toBe(0);
  });

  test('a write cancelled between two transactions leaves the old chunks, and its own are collected', async () => {
    const id = await newIndex();
    await write(id, 'c.txt', source('kept', 5));
    const controller = new AbortController();
    const cancelled = source('dropped', 2000);
    let written = 0;
    const counting: ChunkSource = {
      count: cancelled.count,
      chunk: (index) => {
        written = Math.max(written, index);
        if (index === 600) controller.abort(new Error('file deleted'));
        return cancelled.chunk(index);
      },
    };
    await expect(store.stage(id, 'c.txt', counting, controller.signal)).rejects.toThrow('file deleted');
    expect(written).toBeLessThan(1000);
    await store.collectGarbage();
    expect(await rows(id)).toBe(5);
    expect(await sources(id, 'kept dropped')).toEqual(['kept']);
  });

  test('chunks half written when knode stopped are discarded when the dataset starts again', async () => {
    const id = await newIndex();
    await write(id, 'd.txt', source('stable', 4));
    const staged = await store.stage(id, 'd.txt', source('unfinished', 700));
    await store.createDatasetIndex(id, DIMENSION); // what the dataset's next start does
    expect(await store.publish(staged)).toBe(false);
    await store.collectGarbage();
    expect(await rows(id)).toBe(4);
    expect(await sources(id, 'stable unfinished')).toEqual(['stable']);
  });
});

describe('upgrading a database indexed before two-phase indexing', () => {
  test("each file's chunks become one visible set with every vector, and its row as indexed keeps its chunks", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'knode-upgrade-'));
    try {
      const sqlite = new SqliteDatabase(join(dir, 'knode.db'), { create: true });
      sqlite.loadExtension(vectorExtensionPath());
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
      const before = new Migrator({ db, provider: { getMigrations: async () => migrations } });
      expect((await before.migrateTo('0006-keyword-layout')).error).toBeUndefined();
      const id = crypto.randomUUID();
      const tables = datasetTables(id);
      sqlite.run("INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', 'now')");
      sqlite.run(
        `INSERT INTO datasets (id, tenant_id, name, dtype, configuration, status, created_at, updated_at) VALUES ('${id}', 't', 'd', 'local_file', '{}', 'running', 'now', 'now')`,
      );
      sqlite.run(
        `INSERT INTO vector_indexes (dataset_id, dimension, chunk_count, keyword_layout, created_at) VALUES ('${id}', 8, 3, 2, 'now')`,
      );
      for (const statement of createTablesSql(tables, DIMENSION)) sqlite.run(statement);
      for (const [rowid, file] of [
        [1, 'a.txt'],
        [2, 'a.txt'],
        [3, 'b.txt'],
      ] as const) {
        sqlite.run('INSERT INTO vector_chunks (row_id, id, dataset_id, file_key, content, metadata) VALUES (?, ?, ?, ?, ?, ?)', [
          rowid,
          crypto.randomUUID(),
          id,
          file,
          `old chunk ${rowid} about lighthouses`,
          '{}',
        ]);
        sqlite.run(`INSERT INTO ${tables.keywords} (rowid, content, title, source) VALUES (?, ?, '', ?)`, [
          rowid,
          `old chunk ${rowid} about lighthouses`,
          file,
        ]);
        sqlite.run(`INSERT INTO ${tables.vectors} (rowid, embedding, embedding_bits) VALUES (?, ?, vec_quantize_binary(?))`, [
          rowid,
          new Uint8Array(unit(rowid).buffer),
          new Uint8Array(unit(rowid).buffer),
        ]);
      }
      sqlite.run(
        `INSERT INTO dataset_files (dataset_id, path, size, mtime_ms, status, chunks, generation, updated_at) VALUES ('${id}', 'a.txt', 1, 1, 'indexed', 2, 1, 'now'), ('${id}', 'b.txt', 1, 1, 'indexed', 1, 1, 'now')`,
      );
      await db.destroy();

      const upgraded = await openDatabase(dir, [vectorExtensionPath()]);
      try {
        const files = await upgraded.db
          .selectFrom('dataset_files')
          .select(['path', 'status', 'chunks', 'chunks_embedded'])
          .orderBy('path')
          .execute();
        expect(files).toEqual([
          { path: 'a.txt', status: 'indexed', chunks: 2, chunks_embedded: 2 },
          { path: 'b.txt', status: 'indexed', chunks: 1, chunks_embedded: 1 },
        ]);
        const upgradedStore = new SqliteVectorStore(upgraded);
        expect(await upgradedStore.filesToEmbed(id)).toEqual([]);
        // Replacing a file written before the upgrade hides its old chunks and deletes them.
        await replaceFileChunks(upgradedStore, id, 'a.txt', [{ content: 'new chunk about harbours', metadata: {}, embedding: unit(5) }]);
        const hits = await upgradedStore.search(id, unit(3), 'lighthouses harbours', options('hybrid'));
        expect(hits.map((hit) => hit.content).sort()).toEqual(['new chunk about harbours', 'old chunk 3 about lighthouses']);
        const count = await upgraded.exclusive((db) => (db.query('SELECT count(*) AS n FROM vector_chunks').get() as { n: number }).n);
        expect(count).toBe(2);
      } finally {
        await upgraded.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
