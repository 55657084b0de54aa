/**
 * Cluster mode's keyword index at scale: the PostgreSQL store (src/vectors/postgres/) against the SQLite
 * store on the same chunks, measured in the same run: indexing time, the keyword index's size on disk, and
 * keyword search p50 / p90 / p99. With `--vectors` it also writes 512-dimension vectors and measures vector
 * and hybrid searches where the server has pgvector (Debian 12's PostgreSQL has none: they are skipped and
 * the output says so; `--pgvector` below starts one that has it). While the searches run, a poller measures
 * the latency of a trivial query on another connection (the "API meanwhile" figure: what a /health-style
 * request waits while searches load the server).
 *
 * Chunks are synthetic, as the PostgreSQL store's figures in src/vectors/postgres/dataset-tables.ts were
 * taken: 120 Zipf-distributed pseudo-words each (5,000-word vocabulary), files of 250 chunks, no vectors
 * unless asked. Queries are four Zipf words.
 *
 * The server is `SVC_DATABASE_URL` when set (its database must be empty of knode tables or be a knode
 * database), otherwise a private cluster started as the tests start one (test/helpers/postgres.ts: Debian's
 * PostgreSQL, data in /dev/shm, fsync off, 16 MB of shared buffers).
 *
 * `--pgvector` starts the private cluster from the copy of Debian's PostgreSQL that pgvector is built into
 * (`bash test/vendor/build-pgvector.sh`: pgvector 0.8.6 from test/vendor), with an operator's memory settings
 * instead of the tests' 16 MB of shared buffers: by default `shared_buffers=1GB`, `maintenance_work_mem=1GB`,
 * `work_mem=64MB` (`--settings=name=value,name=value` replaces them; still data in /dev/shm and fsync off).
 * The output's first lines name the server's version, pgvector's, and the settings the server reports.
 *
 * `--pglite` runs the PostgreSQL store on PGlite with its pgvector package instead (WebAssembly in this
 * process: an indication of pgvector's figures where no server has it, not a server's).
 *
 * `--ingest` also times ingestion through knode itself (real processes, `bun src/main.ts`): the same chunks
 * as text files in a folder dataset, until every file is keyword-searchable, on one and on two replicas
 * sharing the PostgreSQL server, and on one process with its SQLite, with GET /health polled meanwhile.
 *
 * Usage: bun scripts/bench/cluster-search.ts [sizes, default 20000] [queries, default 200] [--vectors] [--no-sqlite] [--no-postgres]
 *   [--pgvector] [--settings=name=value,...] [--pglite] [--ingest]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { type Db, openDatabase } from '../../src/db/database.ts';
import { openPostgresDatabase } from '../../src/db/postgres/database.ts';
import { seededRandom } from '../../src/util/seeded-random.ts';
import { calibrationFor } from '../../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../../src/vectors/extension.ts';
import { PostgresVectorStore } from '../../src/vectors/postgres/store.ts';
import { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import type { ChunkText, SearchOptions, VectorStore } from '../../src/vectors/store.ts';
import { ADMIN_KEY } from '../../test/helpers/constants.ts';
import { callKnode, type KnodeProcess, startKnodeProcess } from '../../test/helpers/knode-process.ts';
import { startPglite } from '../../test/helpers/pglite.ts';
import { startPostgres } from '../../test/helpers/postgres.ts';
import { benchSettings, describeServer } from './pgvector-server.ts';
import { zipfWords } from './zipf-words.ts';

const DIMENSION = 512;
const CHUNKS_PER_FILE = 250;
const WORDS_PER_CHUNK = 120;
const flags = process.argv.slice(2).filter((arg) => arg.startsWith('--'));
const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const sizes = (positional[0] ?? '20000').split(',').map(Number);
const queryCount = Number(positional[1] ?? 200);
const withVectors = flags.includes('--vectors');
const withSqlite = !flags.includes('--no-sqlite');
/** `--no-postgres`: the SQLite store alone, on the same chunks (no server is started). */
const withPostgres = !flags.includes('--no-postgres');
const onPglite = flags.includes('--pglite');
const withIngestion = flags.includes('--ingest');
const onPgvector = flags.includes('--pgvector');
/** Debian's server without pgvector keeps the tests' settings unless asked; the server with pgvector gets an operator's. */
const serverSettings = onPgvector || flags.some((flag) => flag.startsWith('--settings=')) ? benchSettings(flags) : [];

const random = seededRandom(7);
const gaussianFrom = (next: () => number) => () => Math.sqrt(-2 * Math.log(next() || 1e-12)) * Math.cos(2 * Math.PI * next());
const gaussian = gaussianFrom(random);
const zipfWord = zipfWords(random);
const words = (count: number) => Array.from({ length: count }, zipfWord).join(' ');

function normalise(vector: Float32Array): Float32Array {
  const norm = Math.hypot(...vector) || 1;
  return vector.map((value) => value / norm);
}
const centres = Array.from({ length: 500 }, () => normalise(Float32Array.from({ length: DIMENSION }, gaussian)));
function clusteredVector(next = random, noise = gaussian): Float32Array {
  const centre = centres[Math.floor(next() * centres.length)] as Float32Array;
  return normalise(centre.map((value) => value + noise() * 0.06));
}

/**
 * A size's files, each made when asked from its own seed: the same chunks for both stores (and the ingestion)
 * without holding them all (a million chunks with vectors took 7 GB held at once).
 */
interface Files {
  readonly count: number;
  chunks(file: number): ChunkText[];
}

function filesOf(size: number): Files {
  return {
    count: Math.ceil(size / CHUNKS_PER_FILE),
    chunks(file) {
      const next = seededRandom(1_000 + file);
      const word = zipfWords(next);
      const noise = gaussianFrom(next);
      return Array.from({ length: Math.min(CHUNKS_PER_FILE, size - file * CHUNKS_PER_FILE) }, (_, index) => ({
        content: Array.from({ length: WORDS_PER_CHUNK }, word).join(' '),
        metadata: { source: `folder/file-${file}.txt`, file_type: 'txt', chunk_index: index },
        ...(withVectors ? { embedding: clusteredVector(next, noise) } : {}),
      }));
    },
  };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Figures {
  p50: number;
  p90: number;
  p99: number;
}

async function time(run: (index: number) => Promise<unknown>): Promise<Figures> {
  for (let i = 0; i < 10; i++) await run(i);
  const samples: number[] = [];
  for (let i = 0; i < queryCount; i++) {
    const start = performance.now();
    await run(i);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p90: percentile(samples, 90), p99: percentile(samples, 99) };
}

const show = (figures: Figures) =>
  `p50 ${figures.p50.toFixed(1).padStart(6)} ms  p90 ${figures.p90.toFixed(1).padStart(6)} ms  p99 ${figures.p99.toFixed(1).padStart(6)} ms`;

/** Writes `size` chunks in files of CHUNKS_PER_FILE through stage + publish, as phase 1 does; seconds taken. */
async function fill(store: VectorStore, datasetId: string, files: Files): Promise<number> {
  const start = performance.now();
  for (let file = 0; file < files.count; file++) {
    const rows = files.chunks(file).map((chunk) => ({ ...chunk, id: crypto.randomUUID() }));
    const staged = await store.stage(datasetId, `folder/file-${file}.txt`, { count: rows.length, chunk: (i) => rows[i] as ChunkText });
    if (!(await store.publish(staged))) throw new Error('publish refused');
  }
  return (performance.now() - start) / 1000;
}

const options = (mode: SearchOptions['mode']): SearchOptions => ({
  mode,
  limit: 10,
  similarityThreshold: 0,
  includeMetadata: true,
  calibration: calibrationFor('use-lite'),
});

/** Latency of a trivial query on its own connection every 20 ms while `work` runs: the API's p99 meanwhile. */
async function polled<T>(poll: () => Promise<unknown>, work: () => Promise<T>): Promise<{ result: T; poller: Figures }> {
  const samples: number[] = [];
  let running = true;
  const poller = (async () => {
    while (running) {
      const start = performance.now();
      await poll();
      samples.push(performance.now() - start);
      await Bun.sleep(20);
    }
  })();
  const result = await work();
  running = false;
  await poller;
  samples.sort((a, b) => a - b);
  return { result, poller: { p50: percentile(samples, 50), p90: percentile(samples, 90), p99: percentile(samples, 99) } };
}

type Queries = { text: string; vector: Float32Array | undefined }[];

async function searches(
  store: VectorStore,
  datasetId: string,
  label: string,
  modes: SearchOptions['mode'][],
  queries: Queries,
  poll: (() => Promise<unknown>) | undefined,
) {
  for (const mode of modes) {
    const run = () =>
      time(async (index) => {
        const query = queries[index % queries.length] as (typeof queries)[number];
        await store.search(datasetId, mode === 'keyword' ? undefined : query.vector, query.text, options(mode));
      });
    if (!poll) {
      console.log(`  ${label} ${mode.padEnd(8)} ${show(await run())}`);
      continue;
    }
    const { result, poller } = await polled(poll, run);
    console.log(`  ${label} ${mode.padEnd(8)} ${show(result)}   | SELECT 1 meanwhile ${show(poller)}`);
  }
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** An answer's JSON from a replica's API (what the ingestion figure needs of it). */
const api = (base: string, method: string, path: string, token?: string, body?: unknown) =>
  callKnode(base, method, path, { ...(token ? { token } : {}), ...(body === undefined ? {} : { body }) });

/**
 * Ingestion through knode itself: the chunks' text as files (a paragraph per chunk, CHUNKS_PER_FILE per
 * file) in a folder dataset with the default embedder, timed until every file is keyword-searchable (phase
 * 1: a PostgreSQL without pgvector never embeds, so that is the phase both engines finish), on `replicas`
 * real processes (`bun src/main.ts`) sharing `databaseUrl`, or on one process with its own SQLite (which
 * embeds meanwhile). GET /health is polled every 20 ms on every replica meanwhile.
 */
async function ingestion(label: string, files: Files, replicas: number, databaseUrl: string | undefined) {
  const root = mkdtempSync(join(tmpdir(), 'knode-bench-ingest-'));
  const processes: KnodeProcess[] = [];
  try {
    const folder = join(root, 'corpus');
    mkdirSync(folder);
    for (let file = 0; file < files.count; file++) {
      writeFileSync(
        join(folder, `file-${file}.txt`),
        files
          .chunks(file)
          .map((chunk) => chunk.content)
          .join('\n\n'),
      );
    }
    for (let replica = 0; replica < replicas; replica++) {
      const dataDir = join(root, `replica-${replica}`);
      mkdirSync(dataDir);
      processes.push(
        await startKnodeProcess({
          SVC_DATA_DIR: dataDir,
          // Cluster mode reads its secrets from the environment (each SQLite process keeps its own).
          ...(databaseUrl
            ? {
                SVC_DATABASE_URL: databaseUrl,
                SVC_JWT_SECRET: 'a-jwt-secret-of-at-least-32-characters',
                SVC_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
              }
            : {}),
          SVC_ADMIN_API_KEY: ADMIN_KEY,
          SVC_OPEN_REGISTRATION: 'true',
          SVC_INGESTION_ROOTS: root,
          SVC_RATE_LIMIT_PER_HOUR: '0',
          SVC_RATE_LIMIT_PER_MINUTE: '0',
        }),
      );
    }
    const first = (processes[0] as KnodeProcess).url;
    const email = `owner-${crypto.randomUUID()}@example.com`;
    const tenant = `owner${Date.now()}`;
    await api(first, 'POST', '/auth/register', undefined, { email, password: 'correct horse battery', tenant_name: tenant });
    const token = (await api(first, 'POST', '/auth/login', undefined, { email, password: 'correct horse battery' })).body.access_token;
    await api(first, 'PATCH', `/tenants/${tenant}`, ADMIN_KEY, { ingestion_roots: [root] });
    const polls = processes.map((replica) => async () => {
      const response = await fetch(`${replica.url}/health`);
      await response.arrayBuffer();
    });
    const { result, poller } = await polled(
      () => Promise.all(polls.map((poll) => poll())),
      async () => {
        const start = performance.now();
        const created = await api(first, 'POST', '/datasets/', token, {
          name: 'corpus',
          dtype: 'local_file',
          configuration: { ingestionPath: folder },
        });
        const id = created.body.id as string;
        for (;;) {
          const view = await api(first, 'GET', `/datasets/${id}`, token);
          const counts = view.body.ingestion;
          if (counts && counts.files_searchable + counts.files_failed >= files.count) {
            return { seconds: (performance.now() - start) / 1000, chunks: Number(counts.chunks), failed: Number(counts.files_failed) };
          }
          if (view.body.status === 'error') throw new Error(`the dataset failed: ${view.body.error}`);
          if (performance.now() - start > 1_800_000) throw new Error(`ingestion not done in 30 minutes: ${JSON.stringify(view.body)}`);
          await Bun.sleep(250);
        }
      },
    );
    console.log(
      `  ${label}: ${files.count} files, ${result.chunks} chunks in ${result.seconds.toFixed(1)} s ` +
        `(${Math.round(result.chunks / result.seconds)} chunks/s${result.failed ? `, ${result.failed} files failed` : ''})   | GET /health meanwhile ${show(poller)}`,
    );
  } finally {
    for (const replica of processes) await replica.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/** Where the PostgreSQL store runs: a server (two connections: the store's and the poller's), or PGlite. */
interface Engine {
  readonly label: string;
  /** The server's address (none for PGlite). */
  readonly url?: string;
  open(): Promise<{ db: Db; poll: (() => Promise<unknown>) | undefined; close(): Promise<void> }>;
  stop(): Promise<void>;
}

async function engine(): Promise<Engine> {
  if (!withPostgres) {
    return {
      label: 'not started (--no-postgres)',
      open: () => Promise.reject(new Error('no PostgreSQL with --no-postgres')),
      async stop() {},
    };
  }
  if (onPglite) {
    return {
      label: 'PGlite with pgvector (WebAssembly, one session: an indication only, no poller)',
      async open() {
        const pglite = await startPglite({ withVector: true });
        return { db: pglite.db, poll: undefined, close: () => pglite.close() };
      },
      async stop() {},
    };
  }
  const server = process.env.SVC_DATABASE_URL ? undefined : await startPostgres({ pgvector: onPgvector, settings: serverSettings });
  const url = process.env.SVC_DATABASE_URL ?? (server?.url as string);
  const privateCluster = onPgvector
    ? "a private cluster of Debian's PostgreSQL with pgvector built in (test/helpers/postgres.ts, test/vendor/build-pgvector.sh)"
    : "a private cluster of Debian's PostgreSQL (test/helpers/postgres.ts)";
  return {
    url,
    label: `${process.env.SVC_DATABASE_URL ? 'SVC_DATABASE_URL' : privateCluster}; ${await describeServer(url)}`,
    async open() {
      const opened = await openPostgresDatabase(url);
      const poller = await openPostgresDatabase(url);
      return {
        db: opened.db,
        poll: () => sql`SELECT 1`.execute(poller.db),
        async close() {
          await poller.close();
          await opened.close();
        },
      };
    },
    stop: async () => server?.stop(),
  };
}

const postgres = await engine();
console.log(`PostgreSQL: ${postgres.label}`);
try {
  for (const size of sizes) {
    const files = filesOf(size);
    const queries: Queries = Array.from({ length: 64 }, () => ({ text: words(4), vector: withVectors ? clusteredVector() : undefined }));
    console.log(
      `${size} chunks of ${WORDS_PER_CHUNK} words in files of ${CHUNKS_PER_FILE}${withVectors ? `, ${DIMENSION}-dimension vectors` : ''}, ${queryCount} queries per figure`,
    );

    const datasetId = crypto.randomUUID();
    if (withPostgres) {
      const opened = await postgres.open();
      const store = await PostgresVectorStore.open(opened.db);
      await store.createDatasetIndex(datasetId, DIMENSION);
      const seconds = await fill(store, datasetId, files);
      await store.collectGarbage();
      await sql.raw('VACUUM ANALYZE').execute(opened.db);
      const bytes = await store.diskUse(datasetId);
      console.log(`  postgres indexing ${seconds.toFixed(1)} s (${Math.round(size / seconds)} chunks/s), on disk ${mb(bytes)}`);
      const modes: SearchOptions['mode'][] = ['keyword'];
      if (withVectors && !store.vectorsMissing) modes.push('vector', 'hybrid');
      if (withVectors && store.vectorsMissing) console.log(`  postgres vector and hybrid skipped: ${store.vectorsMissing}`);
      await searches(store, datasetId, 'postgres', modes, queries, opened.poll);
      await store.dropDatasetIndex(datasetId);
      await store.close();
      await opened.close();
    }

    if (withSqlite) {
      const dataDir = mkdtempSync(join(tmpdir(), 'knode-bench-cluster-'));
      try {
        const sqlite = await openDatabase(dataDir, [vectorExtensionPath()]);
        const sqliteStore = new SqliteVectorStore(sqlite);
        await sqliteStore.createDatasetIndex(datasetId, DIMENSION);
        const sqliteSeconds = await fill(sqliteStore, datasetId, files);
        await sqliteStore.collectGarbage();
        await sqlite.exclusive((db) => db.run('PRAGMA wal_checkpoint(TRUNCATE)'));
        console.log(
          `  sqlite   indexing ${sqliteSeconds.toFixed(1)} s (${Math.round(size / sqliteSeconds)} chunks/s), on disk ${mb(await sqliteStore.diskUse(datasetId))}`,
        );
        const sqliteModes: SearchOptions['mode'][] = withVectors ? ['keyword', 'vector', 'hybrid'] : ['keyword'];
        // No poller: bun:sqlite searches run on this thread, so a poller here would time the searches themselves.
        await searches(sqliteStore, datasetId, 'sqlite  ', sqliteModes, queries, undefined);
        await sqliteStore.close();
        await sqlite.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
    if (withIngestion && postgres.url) {
      await ingestion('postgres, one replica ', files, 1, postgres.url);
      await ingestion('postgres, two replicas', files, 2, postgres.url);
      await ingestion('sqlite, one process   ', files, 1, undefined);
    }
  }
} finally {
  await postgres.stop();
}
