/**
 * Embedding shared by replicas (src/ingestion/shared-embedding.ts) with the PostgreSQL store's real
 * pgvector writes, in-process on PGlite (Debian's server has no pgvector, docs/STACK.md): two replicas'
 * SharedEmbedding over one database embed a dataset together; every chunk gets exactly one vector, and
 * the right one, both replicas write some, and each file turns `indexed` exactly once (a trigger counts the
 * transitions). A replica killed mid-window (it stops renewing and never answers) leaves its windows to
 * lapse, and the other takes them over after the TTL: nothing lost, nothing twice. PGlite is one session,
 * so the two interleave at each statement; the claims' concurrency on a real server is in
 * cluster-embedding-windows.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'kysely';
import pino from 'pino';
import { PostgresEmbeddingWindows } from '../src/coordination/postgres/embedding-windows.ts';
import type { Embedder } from '../src/embeddings/embedder.ts';
import { embedChunks } from '../src/embeddings/pieces.ts';
import { FileRepository } from '../src/ingestion/files-repository.ts';
import { type EmbeddingWindows, SharedEmbedding } from '../src/ingestion/shared-embedding.ts';
import { postgresTables } from '../src/vectors/postgres/dataset-tables.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import type { ChunkText } from '../src/vectors/store.ts';
import { WHOLE_TEXT_WINDOW } from './helpers/constants.ts';
import { type InProcessPostgres, startPglite } from './helpers/pglite.ts';
import { waitFor } from './helpers/wait.ts';

const DIMENSION = 8;
const log = pino({ level: 'silent' });
let postgres: InProcessPostgres;
let store: PostgresVectorStore;

beforeAll(async () => {
  postgres = await startPglite();
  store = await PostgresVectorStore.open(postgres.db);
  // The files' rows without their dataset's and tenant's; and a count of each file's turn to `indexed`.
  await sql`ALTER TABLE dataset_files DROP CONSTRAINT dataset_files_dataset_id_fkey`.execute(postgres.db);
  await sql`CREATE TABLE indexed_transitions (dataset_id TEXT, path TEXT)`.execute(postgres.db);
  await sql
    .raw(`CREATE FUNCTION count_indexed() RETURNS trigger AS $$ BEGIN
      INSERT INTO indexed_transitions VALUES (NEW.dataset_id, NEW.path); RETURN NEW; END $$ LANGUAGE plpgsql`)
    .execute(postgres.db);
  await sql
    .raw(`CREATE TRIGGER indexed_once AFTER UPDATE ON dataset_files FOR EACH ROW
      WHEN (OLD.status <> 'indexed' AND NEW.status = 'indexed') EXECUTE FUNCTION count_indexed()`)
    .execute(postgres.db);
});

afterAll(async () => {
  await store?.close();
  await postgres?.close();
});

/** The vector of a text: the same on every replica, different for different texts. */
function vectorOf(text: string): Float32Array {
  const vector = new Float32Array(DIMENSION);
  for (let index = 0; index < text.length; index++)
    vector[index % DIMENSION] = (vector[index % DIMENSION] as number) + text.charCodeAt(index) * (index + 1);
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

/** An embedder taking `msPerText` per text; `hang()` makes every later call wait until aborted (a killed process). */
function fakeEmbedder(msPerText: number) {
  let hanging = false;
  let calls = 0;
  const embedder: Embedder = {
    id: 'fake-embedder',
    dimension: DIMENSION,
    window: WHOLE_TEXT_WINDOW,
    async embed(texts, signal) {
      calls++;
      if (hanging) await new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
      await new Promise((resolve) => setTimeout(resolve, msPerText * texts.length));
      return texts.map(vectorOf);
    },
  };
  return { embedder, hang: () => (hanging = true), calls: () => calls };
}

interface Replica {
  readonly shared: SharedEmbedding;
  /** The replica stops renewing and claiming, as a process killed with -9 does. */
  kill(): void;
}

async function replica(name: string, datasetId: string, embedder: Embedder | Error, ttlMs: number, holder: boolean): Promise<Replica> {
  // Alive, as every replica is while it runs (coordination/replica-liveness.ts): probes of gone replicas are dropped.
  await sql`
    INSERT INTO coordination_leases (name, holder, token, acquired_at, expires_at)
    VALUES (${`replica:${name}`}, ${name}, 1, clock_timestamp(), clock_timestamp() + interval '1 hour')
    ON CONFLICT (name) DO NOTHING`.execute(postgres.db);
  let dead = false;
  const table = new PostgresEmbeddingWindows(postgres.db, { claimer: name, ttlMs });
  const windows: EmbeddingWindows = {
    claimer: table.claimer,
    ttlMs: table.ttlMs,
    takeLapsed: (id) => table.takeLapsed(id),
    claimedUpTo: (id) => table.claimedUpTo(id),
    claim: (id, parts) => table.claim(id, parts),
    isNext: (window) => table.isNext(window),
    renew: (ids) => (dead ? Promise.reject(new Error('killed')) : table.renew(ids)),
    finish: (window) => (dead ? Promise.resolve() : table.finish(window)),
    saveProbe: (id, embedderId, probe) => table.saveProbe(id, embedderId, probe),
    holderProbe: (id) => table.holderProbe(id),
  };
  const shared = new SharedEmbedding({
    windows,
    store,
    files: new FileRepository(postgres.db),
    db: postgres.db,
    log,
    datasets: async () => (dead ? [] : [datasetId]),
    embedderOf: async () => {
      if (embedder instanceof Error) throw embedder;
      return embedder;
    },
    holds: () => holder,
    embed: (_id, used, texts, signal) => embedChunks(texts, used.window, (pieces) => used.embed(pieces, signal)),
    mayEmbed: () => !dead,
    progressOf: () => undefined,
    window: { texts: 48, characters: 64_000 },
    windowsInFlight: 2,
    pollMs: 20,
  });
  shared.start();
  return {
    shared,
    kill: () => {
      dead = true;
    },
  };
}

/** A dataset of files of `sizes` chunks, published and `searchable`, the holder's lease row in place. */
async function dataset(sizes: readonly number[], holder: string): Promise<string> {
  const datasetId = crypto.randomUUID();
  await store.createDatasetIndex(datasetId, DIMENSION);
  for (const [index, size] of sizes.entries()) {
    const path = `file-${index}.txt`;
    const chunks = Array.from({ length: size }, (_, chunk) => ({ content: `${path} chunk ${chunk} of ${size}`, metadata: {} }));
    const staged = await store.stage(datasetId, path, { count: size, chunk: (chunk) => chunks[chunk] as ChunkText });
    if (!(await store.publish(staged))) throw new Error(`${path} was not published`);
    await sql`
      INSERT INTO dataset_files (dataset_id, path, status, chunks, chunks_embedded, generation, updated_at)
      VALUES (${datasetId}, ${path}, 'searchable', ${size}, 0, 1, ${new Date().toISOString()})`.execute(postgres.db);
  }
  await sql`
    INSERT INTO coordination_leases (name, holder, token, acquired_at, expires_at)
    VALUES (${`dataset:${datasetId}`}, ${holder}, 1, clock_timestamp(), clock_timestamp() + interval '1 hour')`.execute(postgres.db);
  return datasetId;
}

/** Every chunk has exactly its own text's vector, every file is indexed once, and no window is left. */
async function expectExactlyEmbedded(datasetId: string, sizes: readonly number[]): Promise<void> {
  const tables = postgresTables(datasetId);
  const { rows } = await sql<{ content: string; embedding: string | null; vectors: number }>`
    SELECT c.content, min(e.embedding::text) AS embedding, count(e.row_id)::int AS vectors
    FROM ${sql.table(tables.chunks)} c
    JOIN vector_sets s ON s.dataset_id = ${tables.datasetId} AND s.state = 'visible' AND c.row_id BETWEEN s.first_row AND s.last_row
    LEFT JOIN ${sql.table(tables.embeddings)} e ON e.row_id = c.row_id
    GROUP BY c.row_id, c.content`.execute(postgres.db);
  expect(rows).toHaveLength(sizes.reduce((sum, size) => sum + size, 0));
  for (const row of rows) {
    expect(row.vectors).toBe(1);
    const stored = JSON.parse(row.embedding as string) as number[];
    const wanted = vectorOf(row.content);
    for (let index = 0; index < DIMENSION; index++) expect(stored[index] as number).toBeCloseTo(wanted[index] as number, 5);
  }
  const files = await sql<{ status: string; chunks: number; chunks_embedded: number }>`
    SELECT status, chunks::int AS chunks, chunks_embedded::int AS chunks_embedded FROM dataset_files WHERE dataset_id = ${datasetId}`.execute(
    postgres.db,
  );
  for (const file of files.rows) expect(file).toMatchObject({ status: 'indexed', chunks_embedded: file.chunks });
  const transitions = await sql<{ path: string; times: number }>`
    SELECT path, count(*)::int AS times FROM indexed_transitions WHERE dataset_id = ${datasetId} GROUP BY path`.execute(postgres.db);
  expect(transitions.rows).toHaveLength(sizes.length);
  for (const transition of transitions.rows) expect(transition.times).toBe(1);
  const left = await sql<{ n: number }>`SELECT count(*)::int AS n FROM embedding_windows WHERE dataset_id = ${datasetId}`.execute(
    postgres.db,
  );
  expect(left.rows[0]?.n).toBe(0);
}

async function allIndexed(datasetId: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM dataset_files WHERE dataset_id = ${datasetId} AND status <> 'indexed'`.execute(postgres.db);
  return rows[0]?.n === 0;
}

describe('embedding shared by two replicas', () => {
  test('two replicas embed one dataset together: one vector per chunk, both write some, each file indexed once', async () => {
    // One big file split across windows (and replicas), and small ones packed several to a window.
    const sizes = [400, 3, 1, 150, 7, 60, 2, 90];
    const datasetId = await dataset(sizes, 'replica-a');
    const a = await replica('replica-a', datasetId, fakeEmbedder(1).embedder, 30_000, true);
    const b = await replica('replica-b', datasetId, fakeEmbedder(1).embedder, 30_000, false);
    try {
      await waitFor('every file indexed', () => allIndexed(datasetId), 60_000);
      await waitFor('the counts', async () => a.shared.written.chunks + b.shared.written.chunks === 713, 10_000);
    } finally {
      await a.shared.stop();
      await b.shared.stop();
    }
    expect(a.shared.written.chunks).toBeGreaterThan(0);
    expect(b.shared.written.chunks).toBeGreaterThan(0);
    // No window was embedded for nothing: each one's turn came, and its vectors followed the ones before.
    expect(a.shared.written.failed + b.shared.written.failed).toBe(0);
    await expectExactlyEmbedded(datasetId, sizes);
  }, 90_000);

  test('a replica killed mid-window: its windows are taken over after the TTL, and nothing is lost or written twice', async () => {
    const sizes = [300, 5, 120, 40];
    const datasetId = await dataset(sizes, 'replica-c');
    const slow = fakeEmbedder(2);
    const c = await replica('replica-c', datasetId, fakeEmbedder(2).embedder, 600, true);
    const d = await replica('replica-d', datasetId, slow.embedder, 600, false);
    try {
      // d embeds its first windows, then dies in the middle of the next one.
      await waitFor('two windows embedded by d', async () => slow.calls() >= 2, 20_000);
      slow.hang();
      const before = slow.calls();
      await waitFor('a window of d hanging', async () => slow.calls() > before, 20_000);
      d.kill();
      const held = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM embedding_windows WHERE dataset_id = ${datasetId} AND claimer = 'replica-d'`.execute(postgres.db);
      expect(held.rows[0]?.n).toBeGreaterThan(0);
      await waitFor('every file indexed', () => allIndexed(datasetId), 60_000);
      const takenOver = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM embedding_windows WHERE dataset_id = ${datasetId} AND claimer = 'replica-d'`.execute(postgres.db);
      expect(takenOver.rows[0]?.n).toBe(0);
    } finally {
      await c.shared.stop();
      await d.shared.stop();
    }
    await expectExactlyEmbedded(datasetId, sizes);
  }, 90_000);

  test('a replica whose embedder differs from the holder’s, or that lacks its model files, claims nothing', async () => {
    const sizes = [20];
    const datasetId = await dataset(sizes, 'replica-e');
    const other: Embedder = {
      id: 'fake-embedder',
      dimension: DIMENSION,
      window: WHOLE_TEXT_WINDOW,
      embed: async (texts) => texts.map((text) => vectorOf(`${text}!`)),
    };
    const e = await replica('replica-e', datasetId, fakeEmbedder(1).embedder, 30_000, true);
    const f = await replica('replica-f', datasetId, other, 30_000, false);
    // As a transformers: embedder whose model is not in this replica's cache, with downloads off.
    const g = await replica('replica-g', datasetId, new Error('model files missing'), 30_000, false);
    try {
      await waitFor('every file indexed', () => allIndexed(datasetId), 30_000);
    } finally {
      await e.shared.stop();
      await f.shared.stop();
      await g.shared.stop();
    }
    expect(f.shared.written.chunks).toBe(0);
    expect(g.shared.written.chunks).toBe(0);
    await expectExactlyEmbedded(datasetId, sizes);
  }, 60_000);
});
