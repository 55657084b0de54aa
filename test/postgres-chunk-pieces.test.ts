/**
 * Vectors over the whole chunk in the PostgreSQL store (issue 23, item 2), in-process on PGlite with
 * pgvector: a chunk's later pieces kept with it (`later_pieces`), each candidate's cosine raised to its
 * closest piece in every mode, the pieces gone with the chunk, a dataset's chunk table made before pieces
 * gaining the column when the dataset starts, and an index made before pieces given them (its vector layout). The SQLite store's side: chunk-pieces.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Calibration } from '../src/vectors/calibration.ts';
import { unpackLaterPieces } from '../src/vectors/piece-similarity.ts';
import { postgresTables } from '../src/vectors/postgres/dataset-tables.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import type { SearchOptions } from '../src/vectors/store.ts';
import { axis, checkIndexMadeBeforePieces, indexedWithPieces, texts } from './helpers/chunk-pieces.ts';
import { type InProcessPostgres, startPglite } from './helpers/pglite.ts';
import { deleteFileChunks, unembedded } from './helpers/vector-store.ts';

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

/** The vector alone decides in vector mode, and a cosine of 0.5 scores 0.5. */
const PLAIN: Calibration = {
  name: 'plain',
  keyword: { weights: { bm25: 1 }, intercept: 0 },
  vector: { weights: { cosine: 10 }, intercept: -5 },
  hybrid: { weights: { bm25: 1, cosine: 10 }, intercept: -5 },
};

const indexed = (contents: string[], vectors: Float32Array[][]) => indexedWithPieces(store, contents, vectors);

async function storedPieces(id: string): Promise<Map<string, Uint8Array | null>> {
  const { rows } = await postgres.pglite.query<{ content: string; later_pieces: Uint8Array | null }>(
    `SELECT content, later_pieces FROM ${postgresTables(id).chunks} ORDER BY row_id`,
  );
  return new Map(rows.map((row) => [row.content, row.later_pieces]));
}

/** Each hit's content and score, best first. */
async function scores(id: string, query: Float32Array, text: string, mode: SearchOptions['mode']): Promise<[string, number][]> {
  const hits = await store.search(id, query, text, { mode, limit: 10, similarityThreshold: 0, includeMetadata: false, calibration: PLAIN });
  return hits.map((hit) => [hit.content, hit.similarity_score]);
}

describe('later pieces in the PostgreSQL store', () => {
  test('are kept with their chunk, raise its cosine in vector and hybrid mode, and go with it', async () => {
    const id = await indexed(['opening only', 'opening then more', 'other words'], [[axis(0)], [axis(0), axis(1), axis(2)], [axis(3)]]);
    const stored = await storedPieces(id);
    expect(stored.get('opening only')).toBeNull();
    expect(unpackLaterPieces(stored.get('opening then more') as Uint8Array, 4).map((vector) => [...vector])).toEqual([
      [...axis(1)],
      [...axis(2)],
    ]);
    // The second chunk's third piece is the query's nearest: 0.8, where its opening alone gives 0.6.
    const near = Float32Array.of(0.6, 0, 0.8, 0);
    const logistic = (cosine: number) => 1 / (1 + Math.exp(-(10 * cosine - 5)));
    const vector = await scores(id, near, '', 'vector');
    expect(vector[0]?.[0]).toBe('opening then more');
    expect(vector[0]?.[1]).toBeCloseTo(logistic(0.8), 5);
    // Hybrid: every candidate (the document's lead puts "opening" in all three) has its closest piece's cosine.
    const { candidates } = await store.candidates(id, near, 'opening', 'hybrid', 10);
    const cosines = candidates.map((candidate) => (candidate.cosine ?? -1).toFixed(5)).sort();
    expect(cosines).toEqual(['0.00000', '0.60000', '0.80000']);
    await deleteFileChunks(store, id, 'a.txt');
    expect((await storedPieces(id)).size).toBe(0);
  });

  test('a chunk table made before pieces gains the column when the dataset starts, its chunks scored by their opening', async () => {
    const id = crypto.randomUUID();
    await store.createDatasetIndex(id, 4);
    const { chunks } = postgresTables(id);
    await postgres.pglite.query(`ALTER TABLE ${chunks} DROP COLUMN later_pieces`);
    await store.createDatasetIndex(id, 4);
    expect(await store.publish(await store.stage(id, 'a.txt', texts('a.txt', ['old chunk'])))).toBe(true);
    const waiting = await unembedded(store, id, 'a.txt', undefined, { texts: 100, characters: 1_000_000 });
    await store.addVectorsOf(id, [{ fileKey: 'a.txt', from: waiting?.from as number, vectors: [[axis(0), axis(1)]] }]);
    expect((await storedPieces(id)).get('old chunk')).not.toBeNull();
    expect((await scores(id, axis(1), '', 'vector'))[0]?.[1]).toBeCloseTo(1 / (1 + Math.exp(-5)), 5);
  });

  test('an index made before pieces: its chunks without them are found, given them once, and the index moves on', async () => {
    const setVectorLayout = async (id: string, layout: number) => {
      await postgres.pglite.query('UPDATE vector_indexes SET vector_layout = $1 WHERE dataset_id = $2', [layout, id]);
    };
    await checkIndexMadeBeforePieces(store, setVectorLayout, PLAIN);
  });
});
