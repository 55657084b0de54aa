/**
 * Fencing tokens on the writes a dataset's lease holder makes (issue 26, item 4), on a real PostgreSQL: two
 * replicas (two pools, two PostgresLeases, two ingestion engines behind two LeasedDatasets, in this process)
 * share one folder (shared storage). Replica A holds the dataset and runs it; its lease is then taken over
 * behind its back (the lease row moved to replica B with the next token, in SQL, as a takeover after a pause
 * past the TTL leaves it), and A's next write under the lease is refused: nothing of A's lands (no file row,
 * no chunk, no status), A's runtime stops without logging an error or marking anything failed, and B, once
 * it runs the dataset, ingests the file exactly once (a trigger counts each file's turns to `searchable`).
 *
 * A single SQLite node (LocalLeases) ingests as before, and a released local lease refuses the same writes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import type { ChangeLog } from '../src/coordination/change-log.ts';
import { LeasedDatasets } from '../src/coordination/dataset-leases.ts';
import { LeaseLostError, type Leases, LocalLeases } from '../src/coordination/leases.ts';
import { PostgresLeases } from '../src/coordination/postgres/leases.ts';
import { type Db, openDatabase } from '../src/db/database.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { IngestionEngine } from '../src/ingestion/engine.ts';
import { FileRepository } from '../src/ingestion/files-repository.ts';
import { ParserPool } from '../src/ingestion/parser-pool.ts';
import type { IngestedDataset, IngestionDatasets } from '../src/ingestion/ports.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import { SqliteVectorStore } from '../src/vectors/sqlite-store.ts';
import type { StagedFile, VectorStore } from '../src/vectors/store.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

const TTL_MS = 60_000; // nothing lapses by itself here: the takeover is made in SQL
const WAIT_MS = 30_000;

let postgres: PrivatePostgres;
let pgA: OpenedPostgres;
let pgB: OpenedPostgres;
let embedder: FakeOpenAIServer;
const folders: string[] = [];

beforeAll(async () => {
  postgres = await startPostgres({ pgvector: true });
  pgA = await openPostgresDatabase(postgres.url);
  pgB = await openPostgresDatabase(postgres.url);
  embedder = startFakeOpenAI({ embeddingDimensions: 8 });
  const db = pgA.db;
  // The files' rows without their dataset's and tenant's rows; statuses land in a table of the test's own.
  await sql`ALTER TABLE dataset_files DROP CONSTRAINT dataset_files_dataset_id_fkey`.execute(db);
  await sql`CREATE TABLE test_statuses (seq SERIAL, dataset_id TEXT, replica TEXT, status TEXT)`.execute(db);
  await sql`CREATE TABLE test_searchable (dataset_id TEXT, path TEXT)`.execute(db);
  await sql
    .raw(`CREATE FUNCTION count_searchable() RETURNS trigger AS $$ BEGIN
      INSERT INTO test_searchable VALUES (NEW.dataset_id, NEW.path); RETURN NEW; END $$ LANGUAGE plpgsql`)
    .execute(db);
  await sql
    .raw(`CREATE TRIGGER searchable_once AFTER UPDATE ON dataset_files FOR EACH ROW
      WHEN (OLD.status <> 'searchable' AND NEW.status = 'searchable') EXECUTE FUNCTION count_searchable()`)
    .execute(db);
});

afterAll(async () => {
  await embedder?.close();
  await pgA?.close();
  await pgB?.close();
  await postgres?.stop();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A new folder of the dataset's (both replicas read it: shared storage). */
function newFolder(files: Record<string, string>): string {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'knode-fencing-')));
  folders.push(folder);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
  return folder;
}

function datasetRecord(datasetId: string, folder: string): IngestedDataset {
  return {
    id: datasetId,
    tenant_id: 'tenant',
    configuration: {
      embedder: 'openai:fake-embed',
      base_url: embedder.url,
      ingestionPath: folder,
      fileTypes: ['txt'],
      chunkSize: 1000,
      chunkOverlap: 0,
    },
  };
}

/**
 * The dataset records as the engine sees them; a status is written as the datasets repository writes it
 * (fenced with the lease first, in its transaction), into the test's table with the replica's name.
 */
function datasetsOf(replica: string, db: Db, dataset: IngestedDataset): IngestionDatasets {
  return {
    listActive: async () => [],
    getAnyTenant: async (id) => (id === dataset.id ? dataset : undefined),
    selection: async () => [{ path: dataset.configuration.ingestionPath, kind: 'folder', prefix: '' }],
    setStatus: async (id, status, _error, lease) => {
      await db.transaction().execute(async (trx) => {
        await lease?.fence(trx);
        await sql`INSERT INTO test_statuses (dataset_id, replica, status) VALUES (${id}, ${replica}, ${status})`.execute(trx);
      });
    },
  };
}

/** The log lines of a replica at warn and above, as objects. */
function capturingLog(lines: { level: number; msg: string }[]) {
  return pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
}

const silentChanges: ChangeLog = {
  transaction: () => Promise.reject(new Error('not used')),
  announce: () => Promise.reject(new Error('not used')),
  subscribe: () => () => undefined,
  catchUp: async () => undefined,
  start: async () => undefined,
  stop: async () => undefined,
};

interface Replica {
  readonly name: string;
  readonly leases: Leases;
  readonly datasets: LeasedDatasets;
  readonly logged: { level: number; msg: string }[];
  close(): Promise<void>;
}

/** A replica: its leases, its store and engine on its own pool, the LeasedDatasets facade in front. */
async function replica(
  name: string,
  opened: OpenedPostgres,
  dataset: IngestedDataset,
  wrapStore: (store: VectorStore) => VectorStore = (store) => store,
): Promise<Replica> {
  const logged: { level: number; msg: string }[] = [];
  const log = capturingLog(logged);
  const dataDir = mkdtempSync(join(tmpdir(), 'knode-fencing-data-'));
  folders.push(dataDir);
  const store = await PostgresVectorStore.open(opened.db);
  const pool = new ParserPool();
  const engine = new IngestionEngine({
    config: loadConfig({ SVC_DATA_DIR: dataDir }),
    datasets: datasetsOf(name, opened.db, dataset),
    files: new FileRepository(opened.db),
    store: wrapStore(store),
    pool,
    log,
    roots: { of: async () => [dataset.configuration.ingestionPath] },
    outbound: async () => ({ fetch, scope: 'the test' }),
  });
  const leases = new PostgresLeases(opened.db, { holder: name, ttlMs: TTL_MS });
  const datasets = new LeasedDatasets({
    leases,
    changes: silentChanges,
    engine,
    activeDatasets: async () => [],
    log,
    announces: false,
    retryEveryMs: 100,
  });
  return {
    name,
    leases,
    datasets,
    logged,
    async close() {
      await engine.close();
      await datasets.close();
      await leases.close();
      await pool.close();
    },
  };
}

/** The takeover a paused replica finds when it wakes: the lease row names `holder`, with the next token. */
async function takeOver(datasetId: string, holder: string): Promise<void> {
  const { numAffectedRows } = await sql`
    UPDATE coordination_leases SET holder = ${holder}, token = token + 1 WHERE name = ${`dataset:${datasetId}`}`.execute(pgB.db);
  expect(Number(numAffectedRows)).toBe(1);
}

async function fileRows(datasetId: string): Promise<{ path: string; status: string; chunks: number }[]> {
  const { rows } = await sql<{ path: string; status: string; chunks: number }>`
    SELECT path, status, chunks::int AS chunks FROM dataset_files WHERE dataset_id = ${datasetId} ORDER BY path`.execute(pgB.db);
  return rows;
}

async function visibleSets(datasetId: string): Promise<{ file_key: string; count: number }[]> {
  const { rows } = await sql<{ file_key: string; count: number }>`
    SELECT file_key, count::int AS count FROM vector_sets WHERE dataset_id = ${datasetId} AND state = 'visible' ORDER BY file_key`.execute(
    pgB.db,
  );
  return rows;
}

async function statuses(datasetId: string): Promise<string[]> {
  const { rows } = await sql<{ replica: string; status: string }>`
    SELECT replica, status FROM test_statuses WHERE dataset_id = ${datasetId} ORDER BY seq`.execute(pgB.db);
  return rows.map((row) => `${row.replica} ${row.status}`);
}

async function searchableTurns(datasetId: string, path: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM test_searchable WHERE dataset_id = ${datasetId} AND path = ${path}`.execute(pgB.db);
  return rows[0]?.n ?? 0;
}

async function isSearchable(datasetId: string, path: string): Promise<boolean> {
  const row = (await fileRows(datasetId)).find((file) => file.path === path);
  return row?.status === 'searchable' || row?.status === 'indexed';
}

/** What a replica logged at error level or above (a refused write must not be one). */
function errorsOf(replica: Replica): string[] {
  return replica.logged.filter((line) => line.level >= 50).map((line) => line.msg);
}

describe('a replica whose dataset lease was taken over behind its back', () => {
  test('a file added afterwards: A records nothing and stops; B ingests the file once', async () => {
    const datasetId = crypto.randomUUID();
    const folder = newFolder({ 'first.txt': 'The first file, ingested by replica A while it holds the dataset.' });
    const dataset = datasetRecord(datasetId, folder);
    const a = await replica('replica-a', pgA, dataset);
    const b = await replica('replica-b', pgB, dataset);
    try {
      await a.datasets.start(datasetId);
      expect(a.datasets.holds(datasetId)).toBe(true);
      await waitFor('first.txt searchable on A', () => isSearchable(datasetId, 'first.txt'), WAIT_MS);
      expect(await statuses(datasetId)).toEqual(['replica-a starting', 'replica-a running']);

      await takeOver(datasetId, 'replica-b');
      writeFileSync(join(folder, 'second.txt'), 'The second file, seen by A only after it lost the dataset.');
      // A's watcher sees it; recording it is A's next write under the lease: refused, and A stops.
      await waitFor('A lost the dataset', async () => !a.datasets.holds(datasetId), WAIT_MS);
      await Bun.sleep(300); // whatever A still had under way has settled
      expect((await fileRows(datasetId)).map((file) => file.path)).toEqual(['first.txt']);
      expect(await statuses(datasetId)).toEqual(['replica-a starting', 'replica-a running']);
      // One warning, no error: the refused write stops the runtime quietly.
      expect(a.logged.map((line) => line.msg)).toEqual(['dataset lease lost: its ingestion stops here']);

      await b.datasets.start(datasetId);
      expect(b.datasets.holds(datasetId)).toBe(true);
      await waitFor('second.txt searchable on B', () => isSearchable(datasetId, 'second.txt'), WAIT_MS);
      expect(await searchableTurns(datasetId, 'second.txt')).toBe(1);
      expect(await searchableTurns(datasetId, 'first.txt')).toBe(1); // B found it indexed: left as it was
      expect(await visibleSets(datasetId)).toEqual([
        { file_key: 'first.txt', count: 1 },
        { file_key: 'second.txt', count: 1 },
      ]);
      expect((await statuses(datasetId)).slice(2)).toEqual(['replica-b starting', 'replica-b running']);
      expect(errorsOf(b)).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  }, 90_000);

  test('a file reaching publication afterwards: its chunks and status are refused, A stops, B ingests it once', async () => {
    const datasetId = crypto.randomUUID();
    const folder = newFolder({ 'report.txt': 'A report whose chunks replica A is about to publish when it loses the dataset.' });
    const dataset = datasetRecord(datasetId, folder);
    // A's publications wait at a gate: the takeover happens while A holds a parsed file, ready to publish.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    let reachedGate!: () => void;
    const atGate = new Promise<void>((resolve) => {
      reachedGate = resolve;
    });
    const gated = (store: VectorStore): VectorStore =>
      new Proxy(store, {
        get(target, property) {
          if (property === 'publish') {
            return async (staged: StagedFile, ...rest: unknown[]) => {
              reachedGate();
              await gate;
              return (target.publish as (...args: unknown[]) => Promise<boolean>).call(target, staged, ...rest);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const a = await replica('replica-a', pgA, dataset, gated);
    const b = await replica('replica-b', pgB, dataset);
    try {
      await a.datasets.start(datasetId);
      await atGate;
      expect(await fileRows(datasetId)).toEqual([{ path: 'report.txt', status: 'indexing', chunks: 0 }]);

      await takeOver(datasetId, 'replica-b');
      openGate();
      await waitFor('A lost the dataset', async () => !a.datasets.holds(datasetId), WAIT_MS);
      await Bun.sleep(300);
      // Nothing of A's publication landed: no visible chunks, the file neither searchable nor failed (B queues it again).
      expect(await visibleSets(datasetId)).toEqual([]);
      expect(await fileRows(datasetId)).toEqual([{ path: 'report.txt', status: 'indexing', chunks: 0 }]);
      expect(await searchableTurns(datasetId, 'report.txt')).toBe(0);
      expect(a.logged.map((line) => line.msg)).toEqual(['dataset lease lost: its ingestion stops here']);

      await b.datasets.start(datasetId);
      await waitFor('report.txt searchable on B', () => isSearchable(datasetId, 'report.txt'), WAIT_MS);
      expect(await searchableTurns(datasetId, 'report.txt')).toBe(1);
      expect(await visibleSets(datasetId)).toEqual([{ file_key: 'report.txt', count: 1 }]);
      expect(await statuses(datasetId)).toEqual(['replica-a starting', 'replica-a running', 'replica-b starting', 'replica-b running']);
      expect(errorsOf(b)).toEqual([]);
    } finally {
      openGate();
      await a.close();
      await b.close();
    }
  }, 90_000);
});

describe('a single SQLite node (LocalLeases)', () => {
  test('ingests under its local lease as before, and a released local lease refuses the same writes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'knode-fencing-sqlite-'));
    folders.push(dataDir);
    const folder = newFolder({ 'note.txt': 'A note ingested on a single node.' });
    const datasetId = crypto.randomUUID();
    const dataset = datasetRecord(datasetId, folder);
    const opened = await openDatabase(join(dataDir, 'db'), [vectorExtensionPath()]);
    // The files' rows without their dataset's and tenant's rows, as on PostgreSQL above.
    await opened.exclusive((sqlite) => sqlite.run('PRAGMA foreign_keys = OFF'));
    const store = new SqliteVectorStore(opened);
    const files = new FileRepository(opened.db);
    const statusesSeen: string[] = [];
    const pool = new ParserPool();
    const engine = new IngestionEngine({
      config: loadConfig({ SVC_DATA_DIR: dataDir }),
      datasets: {
        ...datasetsOf('node', opened.db, dataset),
        setStatus: async (_id, status, _error, lease) => {
          lease?.signal.throwIfAborted();
          statusesSeen.push(status);
        },
      },
      files,
      store,
      pool,
      log: pino({ level: 'silent' }),
      roots: { of: async () => [folder] },
      outbound: async () => ({ fetch, scope: 'the test' }),
    });
    const leases = new LocalLeases('node');
    const datasets = new LeasedDatasets({
      leases,
      changes: silentChanges,
      engine,
      activeDatasets: async () => [],
      log: pino({ level: 'silent' }),
      announces: false,
    });
    try {
      await datasets.start(datasetId);
      await waitFor(
        'note.txt searchable',
        async () => {
          const [row] = await files.list(datasetId, 0, 10);
          return row?.status === 'searchable' || row?.status === 'indexed';
        },
        WAIT_MS,
      );
      expect(statusesSeen).toEqual(['starting', 'running']);
      await datasets.stop(datasetId);
      expect(statusesSeen.at(-1)).toBe('stopped');

      // The same writes under a local lease since released: refused, and nothing changes.
      const acquisition = await leases.acquire(`dataset:${datasetId}`);
      if (!acquisition.acquired) throw new Error('the local lease is free');
      const { lease } = acquisition;
      const staged = await store.stage(datasetId, 'late.txt', { count: 1, chunk: () => ({ content: 'late', metadata: {} }) });
      await lease.release();
      await expect(store.publish(staged, lease)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(files.seen(datasetId, { path: 'late.txt', size: 4, mtimeMs: 1 }, lease)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(store.retireFile(datasetId, 'note.txt', lease)).rejects.toBeInstanceOf(LeaseLostError);
      expect((await files.list(datasetId, 0, 10)).map((row) => row.path)).toEqual(['note.txt']);
      expect(await store.retireFile(datasetId, 'note.txt')).toBe(1); // its chunks were still there
    } finally {
      await engine.close();
      await datasets.close();
      await pool.close();
      await opened.close();
    }
  }, 60_000);
});
