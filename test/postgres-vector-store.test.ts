/**
 * The PostgreSQL store (src/vectors/postgres/) with pgvector, in-process on PGlite: a dataset's tables from
 * creation to drop, a file's chunks swapped in at once in both phases, hidden chunks left out of every
 * search and collected with their postings and counts, vectors beyond 2,000 dimensions as halfvec, and a
 * dataset's own calibration. Concurrency and a server without pgvector: postgres-vector-store-keywords.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Calibration } from '../src/vectors/calibration.ts';
import { POSTINGS_LAYOUT, PostingsLayoutError } from '../src/vectors/postgres/dataset-tables.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import type { FittedCalibration } from '../src/vectors/self-calibration.ts';
import { type ChunkSource, type ChunkText, type SearchOptions, VectorIndexMissingError } from '../src/vectors/store.ts';
import { type InProcessPostgres, startPglite } from './helpers/pglite.ts';
import { addVectors, deleteFileChunks, replaceFileChunks, unembedded } from './helpers/vector-store.ts';

const DIMENSION = 8;
let postgres: InProcessPostgres;
let store: PostgresVectorStore;

beforeAll(async () => {
  postgres = await startPglite();
  store = await PostgresVectorStore.open(postgres.db);
});

afterAll(async () => {
  await store?.close();
  await postgres?.close();
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

function unit(axis: number, dimension = DIMENSION): Float32Array {
  const vector = new Float32Array(dimension);
  vector[axis % dimension] = 1;
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

async function newIndex(dimension = DIMENSION): Promise<string> {
  const id = crypto.randomUUID();
  await store.createDatasetIndex(id, dimension);
  return id;
}

async function write(id: string, fileKey: string, chunks: ChunkSource): Promise<void> {
  expect(await store.publish(await store.stage(id, fileKey, chunks))).toBe(true);
}

async function sources(id: string, query: string, mode: SearchOptions['mode'] = 'keyword'): Promise<string[]> {
  const hits = await store.search(id, mode === 'keyword' ? undefined : unit(0), query, options(mode, 100));
  return [...new Set(hits.map((hit) => String(hit.content.split(' about ')[1])))].sort();
}

async function one(sql: string): Promise<number> {
  const [row] = (await postgres.pglite.query<{ n: number }>(sql)).rows;
  return Number(row?.n);
}

const hex = (id: string) => id.replaceAll('-', '');
const rows = (id: string) => one(`SELECT count(*) AS n FROM vector_chunks_${hex(id)}`);

/**
 * What BM25 reads is what the rows say: the index's row and token totals, each term's chunk count, the
 * visible chunk count.
 */
async function expectCountsConsistent(id: string): Promise<void> {
  const h = hex(id);
  const [index] = (
    await postgres.pglite.query<{ chunk_count: number; keyword_rows: number; keyword_tokens: number }>(
      'SELECT chunk_count, keyword_rows, keyword_tokens FROM vector_indexes WHERE dataset_id = $1',
      [id],
    )
  ).rows;
  expect(Number(index?.keyword_rows)).toBe(await rows(id));
  expect(Number(index?.keyword_tokens)).toBe(await one(`SELECT coalesce(sum(tokens), 0) AS n FROM vector_chunks_${h}`));
  expect(Number(index?.chunk_count)).toBe(
    await one(`SELECT coalesce(sum(count), 0) AS n FROM vector_sets WHERE dataset_id = '${id}' AND state = 'visible'`),
  );
  const wrong = await one(
    `SELECT count(*) AS n FROM (SELECT term, sum(cardinality(offsets)) AS c FROM vector_postings_${h} GROUP BY term) p ` +
      `FULL JOIN vector_terms_${h} t USING (term) WHERE p.c IS DISTINCT FROM t.chunks`,
  );
  expect(wrong).toBe(0);
}

describe('dataset indexes', () => {
  test('creating makes the chunk, postings, terms and vector tables; again with the same dimension is a no-op', async () => {
    const id = await newIndex();
    await store.createDatasetIndex(id, DIMENSION);
    const tables = (
      await postgres.pglite.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE tablename LIKE $1 ORDER BY 1`, [
        `%${hex(id)}`,
      ])
    ).rows.map((row) => row.name);
    expect(tables).toEqual(['chunks', 'embeddings', 'postings', 'terms'].map((kind) => `vector_${kind}_${hex(id)}`));
    expect(await one(`SELECT count(*) AS n FROM pg_indexes WHERE indexname = 'vector_embeddings_${hex(id)}_hnsw'`)).toBe(1);
    expect(store.vectorsMissing).toBeUndefined();
    expect(store.pgvectorVersion).toMatch(/^0\.\d+\.\d+$/);
  });

  test('refuses another dimension for an existing index, a bad dimension, and an id that is not a UUID', async () => {
    const id = await newIndex();
    await expect(store.createDatasetIndex(id, 32)).rejects.toThrow(/already has a 8-dimension index/);
    await expect(store.createDatasetIndex(crypto.randomUUID(), 0)).rejects.toThrow(/dimension/);
    await expect(store.createDatasetIndex(crypto.randomUUID(), 1.5)).rejects.toThrow(/dimension/);
    await expect(store.createDatasetIndex('x; DROP TABLE users; --', DIMENSION)).rejects.toThrow(/UUID/);
  });

  test('dropping removes the tables, sets and calibration; searching afterwards says the index is missing', async () => {
    const id = await newIndex();
    const kept = await newIndex();
    await write(id, 'a.txt', source('alpha', 3, true));
    await write(kept, 'a.txt', source('alpha', 3, true));
    expect(await store.diskUse(id)).toBeGreaterThan(0);
    await store.saveCalibration(id, fitted(10));
    await store.dropDatasetIndex(id);
    expect(await one(`SELECT count(*) AS n FROM pg_tables WHERE tablename LIKE '%${hex(id)}'`)).toBe(0);
    expect(await one(`SELECT count(*) AS n FROM vector_sets WHERE dataset_id = '${id}'`)).toBe(0);
    expect((await store.fittedCalibrations([id])).size).toBe(0);
    expect(await store.diskUse(id)).toBe(0);
    await expect(store.search(id, unit(0), 'alpha', options('hybrid'))).rejects.toThrow(VectorIndexMissingError);
    await expect(store.stage(id, 'b.txt', source('beta', 1)).then((staged) => store.publish(staged))).rejects.toThrow(
      VectorIndexMissingError,
    );
    await store.dropDatasetIndex(id); // dropping twice is harmless
    expect(await sources(kept, 'alpha', 'hybrid')).toEqual(['alpha']);
  });

  test('postings in a layout this knode does not read refuse searches and writes (503), and their garbage is left alone', async () => {
    const id = await newIndex();
    const other = await newIndex();
    await write(id, 'a.txt', source('alpha', 3, true));
    await write(other, 'a.txt', source('alpha', 3, true));
    expect(await one(`SELECT postings_layout AS n FROM vector_indexes WHERE dataset_id = '${id}'`)).toBe(POSTINGS_LAYOUT);
    // As a newer knode would leave it during a rolling upgrade.
    await postgres.pglite.query('UPDATE vector_indexes SET postings_layout = $1 WHERE dataset_id = $2', [POSTINGS_LAYOUT + 1, id]);
    await postgres.pglite.query("UPDATE vector_sets SET state = 'garbage' WHERE dataset_id = $1", [id]);
    await write(other, 'a.txt', source('beta', 2, true));
    const refused = store.search(id, undefined, 'alpha', options('keyword'));
    await expect(refused).rejects.toThrow(PostingsLayoutError);
    await expect(refused).rejects.toMatchObject({ kind: 'unavailable' });
    await expect(store.search(id, unit(0), 'alpha', options('hybrid'))).rejects.toThrow(/postings layout 2, written by another version/);
    await expect(store.createDatasetIndex(id, DIMENSION)).rejects.toThrow(PostingsLayoutError);
    await expect(store.stage(id, 'b.txt', source('beta', 1)).then((staged) => store.publish(staged))).rejects.toThrow(PostingsLayoutError);
    await expect(store.retireFile(id, 'a.txt')).rejects.toThrow(PostingsLayoutError);
    // The other dataset's garbage is still collected; this one's waits for a knode that reads its layout.
    await store.collectGarbage();
    expect(await sources(other, 'alpha')).toEqual([]);
    expect(await one(`SELECT count(*) AS n FROM vector_sets WHERE dataset_id = '${other}' AND state = 'garbage'`)).toBe(0);
    expect(await rows(id)).toBe(3);
    expect(await one(`SELECT count(*) AS n FROM vector_sets WHERE dataset_id = '${id}' AND state = 'garbage'`)).toBe(1);
  });

  test('disk use grows with the chunks (pg_total_relation_size of its tables)', async () => {
    const id = await newIndex();
    const empty = await store.diskUse(id);
    await write(id, 'big.txt', source('growing', 400, true));
    expect(await store.diskUse(id)).toBeGreaterThan(empty);
  });
});

describe('writing chunks', () => {
  test('replacing a file leaves no stale chunks, postings, terms or vectors, and the counts BM25 reads stay true', async () => {
    const id = await newIndex();
    await write(id, 'pets.md', source('cats', 4, true));
    await write(id, 'other.md', source('dogs', 2, true));
    const ids = await replaceFileChunks(store, id, 'pets.md', [{ content: 'Kittens purr.', metadata: {}, embedding: unit(3) }]);
    expect(await rows(id)).toBe(3);
    expect(await one(`SELECT count(*) AS n FROM vector_embeddings_${hex(id)}`)).toBe(3);
    expect(await one(`SELECT count(*) AS n FROM vector_terms_${hex(id)} WHERE term = 'cat'`)).toBe(0);
    await expectCountsConsistent(id);
    const hits = await store.search(id, unit(3), 'kittens cats', options('hybrid'));
    expect(hits[0]?.document_id).toBe(ids[0] as string);
    expect(hits.map((hit) => hit.content)).not.toContain('chunk 0 about cats');
  });

  test('a bad chunk or a duplicate id fails the whole replacement, and the old chunks stay searchable', async () => {
    const id = await newIndex();
    await write(id, 'pets.md', source('cats', 2, true));
    const [existing] = await replaceFileChunks(store, id, 'weather.md', [{ content: 'Sunny all week.', metadata: {}, embedding: unit(2) }]);
    await expect(
      replaceFileChunks(store, id, 'pets.md', [
        { content: 'fine', metadata: {}, embedding: unit(1) },
        { content: 'wrong size', metadata: {}, embedding: new Float32Array(DIMENSION + 1) },
      ]),
    ).rejects.toThrow(/8 dimensions/);
    await expect(
      replaceFileChunks(store, id, 'pets.md', [{ content: 'nan', metadata: {}, embedding: new Float32Array(DIMENSION).fill(Number.NaN) }]),
    ).rejects.toThrow(/finite/);
    await expect(
      replaceFileChunks(store, id, 'pets.md', [{ id: existing as string, content: 'clash', metadata: {}, embedding: unit(1) }]),
    ).rejects.toThrow();
    expect(await sources(id, 'cats')).toEqual(['cats']);
    await expectCountsConsistent(id);
  });

  test('deleting a file removes only its chunks and says how many; an empty replacement is a delete', async () => {
    const id = await newIndex();
    await write(id, 'a.txt', source('alpha', 2, true));
    await write(id, 'b.txt', source('beta', 3, true));
    expect(await deleteFileChunks(store, id, 'a.txt')).toBe(2);
    expect(await deleteFileChunks(store, id, 'a.txt')).toBe(0);
    expect(await replaceFileChunks(store, id, 'b.txt', [])).toEqual([]);
    expect(await rows(id)).toBe(0);
    expect(await one(`SELECT count(*) AS n FROM vector_terms_${hex(id)}`)).toBe(0);
    await expectCountsConsistent(id);
  });

  test('text PostgreSQL cannot hold (NUL, a lone surrogate) is stored with U+FFFD and still found by its words', async () => {
    const id = await newIndex();
    await write(id, 'odd.txt', {
      count: 1,
      chunk: () => ({ content: 'null\u0000byte and \ud800 lone', metadata: { title: 'odd\u0000' } }),
    });
    const [hit] = await store.search(id, undefined, 'byte lone', options('keyword'));
    expect(hit?.content).toBe('null\ufffdbyte and \ufffd lone');
  });
});

describe('two phases', () => {
  test('chunks without vectors are found by keywords in keyword and hybrid modes, by vector only once embedded', async () => {
    const id = await newIndex();
    await write(id, 'a.txt', source('alpha', 5));
    expect(await sources(id, 'alpha')).toEqual(['alpha']);
    expect(await sources(id, 'alpha', 'hybrid')).toEqual(['alpha']);
    expect(await sources(id, '', 'vector')).toEqual([]);
    expect(await store.filesToEmbed(id)).toEqual(['a.txt']);
    const waiting = await unembedded(store, id, 'a.txt', undefined, { texts: 3, characters: 10_000 });
    expect(waiting?.rows.map((row) => row.content)).toEqual(['chunk 0 about alpha', 'chunk 1 about alpha', 'chunk 2 about alpha']);
    expect(waiting?.last).toBe(false);
    expect(await addVectors(store, id, 'a.txt', waiting?.from as number, [unit(0), unit(1), unit(2)])).toEqual({ embedded: 3, count: 5 });
    const rest = await unembedded(store, id, 'a.txt', undefined, { texts: 10, characters: 10_000 });
    expect(rest?.from).toBe((waiting?.from as number) + 3);
    expect(rest?.last).toBe(true);
    await expect(addVectors(store, id, 'a.txt', (rest?.from as number) + 1, [unit(4)])).rejects.toThrow(/in order/);
    expect(await addVectors(store, id, 'a.txt', rest?.from as number, [unit(3), unit(4)])).toEqual({ embedded: 5, count: 5 });
    expect(await store.filesToEmbed(id)).toEqual([]);
    expect((await store.search(id, unit(0), '', options('vector'))).length).toBe(5);
  });

  test('a window of several files is written in slices, each file keeping its own progress', async () => {
    const id = await newIndex();
    await write(id, 'a.txt', source('alpha', 200));
    await write(id, 'b.txt', source('beta', 100));
    const [a, b] = await store.unembeddedOf(
      id,
      [
        { fileKey: 'a.txt', from: undefined },
        { fileKey: 'b.txt', from: undefined },
      ],
      { texts: 1000, characters: 1_000_000 },
    );
    const progress = await store.addVectorsOf(id, [
      { fileKey: 'a.txt', from: a?.from as number, vectors: a?.rows.map((_, index) => [unit(index)]) ?? [] },
      { fileKey: 'b.txt', from: b?.from as number, vectors: b?.rows.map((_, index) => [unit(index)]) ?? [] },
    ]);
    expect(progress).toEqual([
      { embedded: 200, count: 200 },
      { embedded: 100, count: 100 },
    ]);
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
  test('is written hidden over several transactions and swapped in at once: searches see its old chunks or its new ones', async () => {
    const id = await newIndex();
    await write(id, 'big.txt', source('alpha', 300));
    const staged = await store.stage(id, 'big.txt', source('omega', 700));
    expect(await rows(id)).toBe(1000);
    expect(await sources(id, 'alpha omega')).toEqual(['alpha']);
    expect(await sources(id, 'alpha omega', 'hybrid')).toEqual(['alpha']);
    expect(await store.publish(staged)).toBe(true);
    expect(await sources(id, 'alpha omega')).toEqual(['omega']);
    await store.collectGarbage();
    expect(await rows(id)).toBe(700);
    await expectCountsConsistent(id);
  });

  test('a vector search skips hidden chunks that have vectors already, with the index and with an exact scan', async () => {
    const id = await newIndex();
    await write(id, 'kept.txt', source('kept', 3, true));
    const staged = await store.stage(id, 'hidden.txt', source('hidden', 600, true));
    for (const vectorScan of ['quantized', 'exact'] as const) {
      const hits = await store.search(id, unit(0), '', { ...options('vector', 5), vectorScan });
      expect(hits.map((hit) => hit.content).sort()).toEqual(['chunk 0 about kept', 'chunk 1 about kept', 'chunk 2 about kept']);
    }
    expect(await sources(id, 'hidden kept', 'hybrid')).toEqual(['kept']);
    await store.discard(staged);
    await store.collectGarbage();
    expect(await rows(id)).toBe(3);
    expect(await one(`SELECT count(*) AS n FROM vector_embeddings_${hex(id)}`)).toBe(3);
    await expectCountsConsistent(id);
  });

  test('deleted while its new chunks are written, the file is not brought back by them', async () => {
    const id = await newIndex();
    await write(id, 'gone.txt', source('first', 300));
    const staged = await store.stage(id, 'gone.txt', source('second', 600));
    expect(await deleteFileChunks(store, id, 'gone.txt')).toBe(300);
    expect(await store.publish(staged)).toBe(false);
    await store.discard(staged);
    await store.collectGarbage();
    expect(await rows(id)).toBe(0);
  });

  test('a write cancelled between two transactions leaves the old chunks; chunks half written at a stop are discarded at the start', async () => {
    const id = await newIndex();
    await write(id, 'c.txt', source('kept', 5));
    const controller = new AbortController();
    const cancelled = source('dropped', 1000);
    const counting: ChunkSource = {
      count: cancelled.count,
      chunk: (index) => {
        if (index === 300) controller.abort(new Error('file deleted'));
        return cancelled.chunk(index);
      },
    };
    await expect(store.stage(id, 'c.txt', counting, controller.signal)).rejects.toThrow('file deleted');
    const unfinished = await store.stage(id, 'c.txt', source('unfinished', 300));
    await store.createDatasetIndex(id, DIMENSION); // what the dataset's next start does
    expect(await store.publish(unfinished)).toBe(false);
    await store.collectGarbage();
    expect(await rows(id)).toBe(5);
    expect(await sources(id, 'kept dropped unfinished')).toEqual(['kept']);
    await expectCountsConsistent(id);
  });
});

describe('vectors', () => {
  test('above 2,000 dimensions they are halfvec, with an HNSW index, and scores keep half-float precision', async () => {
    const dimension = 2048;
    const id = await newIndex(dimension);
    const type = await one(
      `SELECT count(*) AS n FROM information_schema.columns WHERE table_name = 'vector_embeddings_${hex(id)}' AND udt_name = 'halfvec'`,
    );
    expect(type).toBe(1);
    await write(id, 'wide.txt', {
      count: 3,
      chunk: (index) => ({ content: `wide ${index}`, metadata: {}, embedding: unit(index, dimension) }),
    });
    for (const vectorScan of ['exact', 'quantized'] as const) {
      const [best] = await store.search(id, unit(1, dimension), '', { ...options('vector', 1), vectorScan });
      expect(best?.content).toBe('wide 1');
      expect(best?.similarity_score).toBeCloseTo(1 / (1 + Math.exp(-5)), 3);
    }
  });

  test('a zero query vector fails nothing and gives every chunk the same vector evidence', async () => {
    const id = await newIndex();
    await write(id, 'a.txt', source('cats', 3, true));
    for (const mode of ['vector', 'hybrid'] as const) {
      for (const vectorScan of ['exact', 'quantized'] as const) {
        const hits = await store.search(id, new Float32Array(DIMENSION), 'cats', { ...options(mode), vectorScan });
        for (const hit of hits) expect(Number.isFinite(hit.similarity_score)).toBe(true);
      }
    }
    await expect(store.search(id, new Float32Array(4), 'cats', options('hybrid'))).rejects.toThrow(/dimensions/);
  });
});

function fitted(questions: number): FittedCalibration {
  return { embedder: 'use-lite', fittedAt: '2026-11-26T00:00:00.000Z', questions, unanswerable: 2, chunkCount: 5, calibration: PLAIN };
}

describe("a dataset's own calibration", () => {
  test('is saved, replaced, read back by dataset id, and sampled files carry their words', async () => {
    const id = await newIndex();
    await write(id, 'a.txt', source('alpha', 3));
    await write(id, 'b.txt', source('beta', 3));
    await store.saveCalibration(id, fitted(10));
    await store.saveCalibration(id, fitted(12));
    const read = await store.fittedCalibrations([id.toUpperCase(), crypto.randomUUID()]);
    expect(read.get(id)).toEqual(fitted(12));
    const sampled = await store.sampleFiles(id, 5, 1);
    expect(sampled.chunkCount).toBe(6);
    expect(sampled.files.map((file) => file.fileKey)).toEqual(['a.txt', 'b.txt']);
    expect(sampled.files[0]?.wordChunks.get('chunk')).toBe(6);
    expect(sampled.files[0]?.wordChunks.get('alpha')).toBe(3);
  });
});
