import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { calibrationFor } from '../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import type { SearchMode } from '../src/vectors/ranking.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import type { CandidateSet, ChunkText, SearchOptions, VectorStore } from '../src/vectors/store.ts';
import { type InProcessPostgres, startPglite } from './helpers/pglite.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';

/**
 * The same corpus indexed by the SQLite store (sqlite-vec + FTS5) and the PostgreSQL store (BM25 from
 * postings, and pgvector: on PGlite in-process, and on a PostgreSQL server with pgvector built in,
 * test/vendor/build-pgvector.sh) gives the same candidates with the same evidence, and the same answers with
 * the same scores, in every mode: today's ranking and calibration carry over to cluster mode unchanged.
 * BM25 is expected to be the very same number (the postings reproduce FTS5's formula operation by
 * operation); cosines differ by float rounding only (each engine sums float32 products in its own order).
 */

const DIMENSION = 32;
const dataDir = mkdtempSync(join(tmpdir(), 'knode-compare-'));
let opened: OpenedDatabase;
let sqliteStore: SqliteVectorStore;
let pglite: InProcessPostgres;
let server: PrivatePostgres;
let serverDatabase: OpenedPostgres;
/** The PostgreSQL store on each engine, named for the tests. */
const postgresStores: { engine: string; store: PostgresVectorStore }[] = [];
const datasetId = crypto.randomUUID();
const queries: { text: string; vector: Float32Array }[] = [];
/** The largest differences seen, printed at the end (the report's figures). */
const largest = { bm25: 0, matched: 0, cosine: 0, score: 0 };

function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 16807) % 2147483647;
    return state / 2147483647;
  };
}

const random = seededRandom(2026);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

function unit(vector: Float32Array): Float32Array {
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

function noisy(vector: Float32Array, amount: number): Float32Array {
  return unit(vector.map((value) => value + (random() - 0.5) * amount));
}

// Words with shared stems (run, running, runs), accents, numbers and stop words, so the tokenizer's work shows.
const TOPICS = [
  'cats kitten purring whiskers felines sleeping naps yarn',
  'markets stocks bonds rates inflation banking investors trading',
  'weather rain snowfall forecast storms winter temperatures humidity',
  'running runners marathon training stamina sprint runs race',
  'cooking recipes café crème brûlée sauce baking oven flour',
  'astronomy planets telescope orbit galaxies stars comets nebula',
  'gardening tomatoes compost seeds pruning roses soil watering',
  'databases postgres sqlite indexes queries transactions vacuum replicas',
].map((line) => line.split(' '));
const COMMON = 'the of and with about for report notes section data 2026 update overview summary'.split(' ');

function sentence(topic: readonly string[], length: number): string {
  return Array.from({ length }, () => (random() < 0.6 ? pick(topic) : pick(COMMON))).join(' ');
}

/** 40 files over 8 topics, 1 to 6 chunks each; each topic has its direction, each chunk a noisy copy of it. */
function corpus(): { fileKey: string; chunks: (ChunkText & { embedding: Float32Array })[] }[] {
  const directions = TOPICS.map(() => unit(Float32Array.from({ length: DIMENSION }, () => random() * 2 - 1)));
  return Array.from({ length: 40 }, (_, file) => {
    const topic = file % TOPICS.length;
    const words = TOPICS[topic] as string[];
    const count = 1 + Math.floor(random() * 6);
    const fileKey = `${pick(['notes', 'archive/2025', 'team_docs'])}/${pick(words)}-${file}.md`;
    return {
      fileKey,
      chunks: Array.from({ length: count }, (_, index) => ({
        id: `${file}-${index}`,
        content: `${sentence(words, 5 + Math.floor(random() * 60))}.`,
        metadata: { source: fileKey, chunk_index: index, ...(index === 0 && random() < 0.5 ? { title: sentence(words, 3) } : {}) },
        embedding: noisy(directions[topic] as Float32Array, 0.8),
      })),
    };
  });
}

async function index(store: VectorStore & { collectGarbage(): Promise<void> }, files: ReturnType<typeof corpus>): Promise<void> {
  await store.createDatasetIndex(datasetId, DIMENSION);
  for (const { fileKey, chunks } of files) {
    const staged = await store.stage(datasetId, fileKey, { count: chunks.length, chunk: (i) => chunks[i] as ChunkText });
    expect(await store.publish(staged)).toBe(true);
  }
  // A file replaced and another deleted: their old rows are garbage, counted by BM25 until collected.
  const replaced = files[3] as (typeof files)[number];
  const again = replaced.chunks.map((chunk) => ({ ...chunk, id: `${chunk.id}-again` }));
  expect(
    await store.publish(await store.stage(datasetId, replaced.fileKey, { count: again.length, chunk: (i) => again[i] as ChunkText })),
  ).toBe(true);
  await store.retireFile(datasetId, (files[7] as (typeof files)[number]).fileKey);
  await store.collectGarbage();
}

beforeAll(async () => {
  const files = corpus();
  for (let query = 0; query < 30; query++) {
    const topic = TOPICS[query % TOPICS.length] as string[];
    // Every seventh a single word: BM25 without an aggregate on PostgreSQL (keyword-search.ts, bm25Sql).
    const words =
      query % 7 === 6
        ? [pick(topic)]
        : [pick(topic), pick(topic), ...(query % 3 === 0 ? ['the', 'how', 'Running'] : []), ...(query % 5 === 0 ? ['zzzunknown'] : [])];
    const chunk = pick(files.flatMap((file) => file.chunks));
    queries.push({ text: words.join(' '), vector: noisy(chunk.embedding, 0.5) });
  }
  opened = await openDatabase(dataDir, [vectorExtensionPath()]);
  sqliteStore = new SqliteVectorStore(opened);
  pglite = await startPglite();
  server = await startPostgres({ pgvector: true });
  serverDatabase = await openPostgresDatabase(server.url);
  postgresStores.push(
    { engine: 'PGlite', store: await PostgresVectorStore.open(pglite.db) },
    { engine: 'a PostgreSQL server', store: await PostgresVectorStore.open(serverDatabase.db) },
  );
  await index(sqliteStore, files);
  for (const { store } of postgresStores) await index(store, files);
}, 60_000);

afterAll(async () => {
  console.log(
    `largest differences between the stores: bm25 ${largest.bm25}, matched ${largest.matched}, cosine ${largest.cosine}, score ${largest.score}`,
  );
  await sqliteStore?.close();
  for (const { store } of postgresStores) await store.close();
  await opened?.close();
  await pglite?.close();
  await serverDatabase?.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function byRow(set: CandidateSet) {
  return new Map(set.candidates.map((candidate) => [candidate.rowid, candidate]));
}

function expectClose(kind: keyof typeof largest, actual: number | undefined, expected: number | undefined, tolerance: number): void {
  expect(actual === undefined).toBe(expected === undefined);
  if (actual === undefined || expected === undefined) return;
  const difference = Math.abs(actual - expected);
  largest[kind] = Math.max(largest[kind], difference);
  expect(difference).toBeLessThanOrEqual(tolerance);
}

for (const engine of ['PGlite', 'a PostgreSQL server']) {
  describe(`the SQLite store and the PostgreSQL store on ${engine}, one corpus`, () => {
    const postgresStore = () => (postgresStores.find((entry) => entry.engine === engine) as { store: PostgresVectorStore }).store;
    test('hold the same chunks', async () => {
      for (const store of [sqliteStore, postgresStore()]) {
        expect(await store.filesToEmbed(datasetId)).toEqual([]);
      }
      const sampled = await sqliteStore.sampleFiles(datasetId, 10, 3);
      expect(await postgresStore().sampleFiles(datasetId, 10, 3)).toEqual(sampled);
    });

    for (const mode of ['keyword', 'vector', 'hybrid'] as const satisfies readonly SearchMode[]) {
      test(`${mode} mode: the same candidates with the same evidence (BM25 identical, cosines within 1e-6)`, async () => {
        for (const { text, vector } of queries) {
          const expected = await sqliteStore.candidates(datasetId, vector, text, mode, 10);
          const actual = await postgresStore().candidates(datasetId, vector, text, mode, 10);
          expect(actual.facts).toEqual(expected.facts);
          const expectedRows = byRow(expected);
          expect([...byRow(actual).keys()].sort((a, b) => a - b)).toEqual([...expectedRows.keys()].sort((a, b) => a - b));
          for (const candidate of actual.candidates) {
            const other = expectedRows.get(candidate.rowid);
            expect(candidate.fileKey).toBe(other?.fileKey as string);
            expectClose('bm25', candidate.bm25, other?.bm25, 0);
            expectClose('matched', candidate.matched, other?.matched, 0);
            expectClose('cosine', candidate.cosine, other?.cosine, 1e-6);
          }
        }
      });

      test(`${mode} mode: the same answers in the same order, scores within 1e-6 (shipped calibration, exact and indexed scans)`, async () => {
        for (const vectorScan of ['exact', 'auto', 'quantized'] as const) {
          const options: SearchOptions = {
            mode,
            limit: 8,
            similarityThreshold: 0,
            includeMetadata: true,
            calibration: calibrationFor('use-lite'),
            vectorScan,
          };
          for (const { text, vector } of queries) {
            const expected = await sqliteStore.search(datasetId, vector, text, { ...options, vectorScan: 'exact' });
            const actual = await postgresStore().search(datasetId, vector, text, options);
            expect(actual.map((hit) => hit.document_id)).toEqual(expected.map((hit) => hit.document_id));
            expect(actual.map((hit) => hit.metadata)).toEqual(expected.map((hit) => hit.metadata));
            for (const [position, hit] of actual.entries()) {
              expectClose('score', hit.similarity_score, expected[position]?.similarity_score, 1e-6);
            }
          }
        }
      });
    }
  });
}
