/**
 * Cluster mode's shared embedding (src/ingestion/shared-embedding.ts): how fast one and two replicas embed
 * one dataset, in chunks per second from the first window claimed to the last file `indexed`.
 *
 * The store is the PostgreSQL one with its real pgvector writes, by default on PGlite in this process
 * (Debian's server has no pgvector, docs/STACK.md; `--pgvector` below runs it on a server), and the replicas are two SharedEmbedding in this process, each
 * with its own embedding scheduler (slices of 64 texts, two at once, as a replica's), its own claimer id and
 * its own windows in flight. What that measures depends on the embedder:
 *
 * - `--embedder=double` (the default): an embedding double whose cost is elsewhere, sleeping 10 ms per call
 *   plus 15 ms per text: a slice of 64 texts takes about a second, as USE-lite's does on two threads, but on
 *   another machine's cores (or an embedding server of fixed capacity per client). Each replica embeds two
 *   slices at once, so one replica's ceiling is about 128 chunks/s, and two replicas' about 256: the ratio
 *   measured against 2.0 is what the protocol costs (claims, waits for turn, in-order writes through one
 *   PGlite session). The vectors have 64 dimensions by default (`--dimension=`): pgvector's HNSW insert on
 *   PGlite (WebAssembly) takes about 1 ms per 64-dimension vector and 4 ms per 512-dimension one, and a
 *   server's is about 1 ms at 512 (src/vectors/postgres/vector-progress.ts), so 64 on PGlite stands for a
 *   server's write cost, where 512 would make PGlite's single session the limit instead of the embedder.
 * - `--embedder=use-lite`: the real USE-lite embedder (512 dimensions). Both replicas share this process's
 *   USE-lite threads and this machine's cores (2 here, shared with other work), so no speed-up is expected:
 *   the figure says what coordination costs when the cores are the limit, not what a second machine adds.
 *
 * `--pgvector` runs the store on a PostgreSQL server instead: a private cluster of the copy of Debian's
 * PostgreSQL that pgvector is built into (`bash test/vendor/build-pgvector.sh`, pgvector 0.8.6 from
 * test/vendor; data in /dev/shm, fsync off) with an operator's memory settings (`shared_buffers=1GB`,
 * `maintenance_work_mem=1GB`, `work_mem=64MB`; `--settings=name=value,...` replaces them). Each replica then
 * has its own pool and its own store on it, as two processes would (test/helpers/postgres.ts
 * `startTwoReplicas`), the vectors have 512 dimensions by default (a server's HNSW insert is not PGlite's), and
 * a poller on a pool of its own times `SELECT 1` every 20 ms meanwhile (the API's p50 / p99 while replicas write).
 *
 * Usage: bun scripts/bench/cluster-embed.ts [chunks, default 3000] [--embedder=double|use-lite] [--dimension=64|512]
 *   [--pgvector] [--settings=name=value,...]
 */
import { sql } from 'kysely';
import pino from 'pino';
import { PostgresEmbeddingWindows } from '../../src/coordination/postgres/embedding-windows.ts';
import type { Db } from '../../src/db/database.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../../src/db/postgres/database.ts';
import { closeEmbedders, createEmbedder, type Embedder } from '../../src/embeddings/embedder.ts';
import { embedChunks } from '../../src/embeddings/pieces.ts';
import { EmbeddingScheduler } from '../../src/ingestion/embedding-scheduler.ts';
import { FileRepository } from '../../src/ingestion/files-repository.ts';
import { SharedEmbedding } from '../../src/ingestion/shared-embedding.ts';
import { PostgresVectorStore } from '../../src/vectors/postgres/store.ts';
import type { ChunkText } from '../../src/vectors/store.ts';
import { startPglite } from '../../test/helpers/pglite.ts';
import { startPostgres } from '../../test/helpers/postgres.ts';
import { benchSettings, describeServer } from './pgvector-server.ts';

const args = process.argv.slice(2);
const chunks = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 3000);
const onServer = args.includes('--pgvector');
const dimension = Number(args.find((arg) => arg.startsWith('--dimension='))?.slice('--dimension='.length) ?? (onServer ? 512 : 64));
const serverSettings = benchSettings(args);
const embedderKind = args.find((arg) => arg.startsWith('--embedder='))?.slice('--embedder='.length) ?? 'double';
const CHUNKS_PER_FILE = 250;
const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });

const WORDS = ['river', 'bank', 'loan', 'stone', 'bridge', 'market', 'rate', 'water', 'ledger', 'harbour', 'grain', 'tide'];

function text(file: number, chunk: number): string {
  const words: string[] = [];
  for (let index = 0; index < 120; index++) words.push(WORDS[(file * 7 + chunk * 13 + index * 5) % WORDS.length] as string);
  return `file ${file} chunk ${chunk}: ${words.join(' ')}`;
}

/** The server this run's clusters are started as (one is started and stopped to read it). */
async function serverDescription(): Promise<string> {
  const server = await startPostgres({ pgvector: true, settings: serverSettings });
  try {
    return await describeServer(server.url);
  } finally {
    await server.stop();
  }
}

/** The embedding double: about a second per slice of 64 texts, spent elsewhere (a server), not on this process's cores. */
function doubleEmbedder(dimension: number): Embedder {
  return {
    id: 'embedding-double',
    dimension,
    // A server's model that reads a whole chunk: one vector a chunk, as before pieces.
    window: { tokens: Number.MAX_SAFE_INTEGER, tokensOf: () => 1 },
    async embed(texts) {
      await Bun.sleep(10 + 15 * texts.length);
      return texts.map((value) => {
        const vector = new Float32Array(dimension);
        for (let index = 0; index < value.length; index++)
          vector[index % dimension] = (vector[index % dimension] as number) + value.charCodeAt(index);
        const norm = Math.hypot(...vector);
        return vector.map((component) => component / norm);
      });
    },
  };
}

/**
 * Where the replicas' store runs: PGlite (one session in this process, shared by every replica), or a
 * private server where each replica has its own pool and store, as a process of its own would.
 */
interface Replicas {
  /** The connection that sets the dataset up and watches its files (replica 0's). */
  readonly db: Db;
  readonly stores: readonly PostgresVectorStore[];
  dbOf(replica: number): Db;
  /** A trivial query on a pool of its own (the API meanwhile), on a server only. */
  readonly poll?: () => Promise<unknown>;
  close(): Promise<void>;
}

async function openReplicas(replicas: number): Promise<Replicas> {
  if (!onServer) {
    const pglite = await startPglite();
    const store = await PostgresVectorStore.open(pglite.db);
    return {
      db: pglite.db,
      stores: Array.from({ length: replicas }, () => store),
      dbOf: () => pglite.db,
      async close() {
        await store.close();
        await pglite.close();
      },
    };
  }
  const server = await startPostgres({ pgvector: true, settings: serverSettings });
  const pools: OpenedPostgres[] = [];
  const stores: PostgresVectorStore[] = [];
  try {
    for (let replica = 0; replica < replicas; replica++) {
      const pool = await openPostgresDatabase(server.url);
      pools.push(pool);
      stores.push(await PostgresVectorStore.open(pool.db));
    }
    const poller = await openPostgresDatabase(server.url, { maxConnections: 1 });
    pools.push(poller);
    return {
      db: (pools[0] as OpenedPostgres).db,
      stores,
      dbOf: (replica) => (pools[replica] as OpenedPostgres).db,
      poll: () => sql`SELECT 1`.execute(poller.db),
      async close() {
        for (const store of stores) await store.close();
        for (const pool of pools) await pool.close();
        await server.stop();
      },
    };
  } catch (error) {
    for (const pool of pools) await pool.close();
    await server.stop();
    throw error;
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Latency of `poll` every 20 ms until `stop()`: p50 and p99 in ms. */
function pollMeanwhile(poll: () => Promise<unknown>): { stop(): Promise<{ p50: number; p99: number; samples: number }> } {
  const samples: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const start = performance.now();
      await poll();
      samples.push(performance.now() - start);
      await Bun.sleep(20);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      samples.sort((a, b) => a - b);
      return { p50: percentile(samples, 50), p99: percentile(samples, 99), samples: samples.length };
    },
  };
}

interface RunResult {
  seconds: number;
  perReplica: number[];
  meanwhile?: { p50: number; p99: number; samples: number };
}

async function run(replicas: number, embedder: Embedder): Promise<RunResult> {
  const opened = await openReplicas(replicas);
  const { db } = opened;
  const store = opened.stores[0] as PostgresVectorStore;
  try {
    await sql`ALTER TABLE dataset_files DROP CONSTRAINT dataset_files_dataset_id_fkey`.execute(db);
    const datasetId = crypto.randomUUID();
    await store.createDatasetIndex(datasetId, embedder.dimension);
    const files = Math.ceil(chunks / CHUNKS_PER_FILE);
    for (let file = 0; file < files; file++) {
      const count = Math.min(CHUNKS_PER_FILE, chunks - file * CHUNKS_PER_FILE);
      const path = `file-${file}.txt`;
      const staged = await store.stage(datasetId, path, {
        count,
        chunk: (chunk): ChunkText => ({ content: text(file, chunk), metadata: {} }),
      });
      await store.publish(staged);
      await sql`
        INSERT INTO dataset_files (dataset_id, path, status, chunks, chunks_embedded, generation, updated_at)
        VALUES (${datasetId}, ${path}, 'searchable', ${count}, 0, 1, ${new Date().toISOString()})`.execute(db);
    }
    // replica-0 holds the dataset; each replica is alive (its liveness lease), as in a cluster.
    await sql`
      INSERT INTO coordination_leases (name, holder, token, acquired_at, expires_at)
      VALUES (${`dataset:${datasetId}`}, 'replica-0', 1, clock_timestamp(), clock_timestamp() + interval '1 hour'),
        ('replica:replica-0', 'replica-0', 1, clock_timestamp(), clock_timestamp() + interval '1 hour'),
        ('replica:replica-1', 'replica-1', 1, clock_timestamp(), clock_timestamp() + interval '1 hour')`.execute(db);
    const poller = opened.poll ? pollMeanwhile(opened.poll) : undefined;
    const started = performance.now();
    const shared = Array.from({ length: replicas }, (_, index) => {
      const scheduler = new EmbeddingScheduler({ concurrency: 2, slice: { texts: 64, characters: 16_000 } });
      const replicaDb = opened.dbOf(index);
      const replica = new SharedEmbedding({
        windows: new PostgresEmbeddingWindows(replicaDb, { claimer: `replica-${index}` }),
        store: opened.stores[index] as PostgresVectorStore,
        files: new FileRepository(replicaDb),
        db: replicaDb,
        log,
        datasets: async () => [datasetId],
        embedderOf: async () => embedder,
        holds: () => index === 0,
        embed: (id, used, texts, signal) => embedChunks(texts, used.window, (pieces) => scheduler.embed(id, used, pieces, signal)),
        mayEmbed: () => true,
        progressOf: () => undefined,
        window: { texts: 256, characters: 64_000 },
        windowsInFlight: 2,
        pollMs: 50,
      });
      replica.start();
      return replica;
    });
    for (;;) {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM dataset_files WHERE dataset_id = ${datasetId} AND status <> 'indexed'`.execute(db);
      if (rows[0]?.n === 0) break;
      await Bun.sleep(50);
    }
    const seconds = (performance.now() - started) / 1000;
    const meanwhile = await poller?.stop();
    await Promise.all(shared.map((replica) => replica.stop()));
    return { seconds, perReplica: shared.map((replica) => replica.written.chunks), ...(meanwhile ? { meanwhile } : {}) };
  } finally {
    await opened.close();
  }
}

const embedder =
  embedderKind === 'use-lite' ? await createEmbedder('use-lite', { dataDir: '/tmp', allowDownload: false }) : doubleEmbedder(dimension);
const where = onServer
  ? `a private cluster of Debian's PostgreSQL with pgvector built in (test/vendor/build-pgvector.sh), ${await serverDescription()}`
  : 'PGlite with pgvector';
console.log(`${chunks} chunks in files of ${CHUNKS_PER_FILE}, embedder ${embedder.id} (${embedder.dimension} dimensions), ${where}`);
if (embedderKind === 'use-lite') await embedder.embed(['warm up']);
const results: Record<number, number> = {};
for (const replicas of [1, 2]) {
  const { seconds, perReplica, meanwhile } = await run(replicas, embedder);
  results[replicas] = chunks / seconds;
  const api = meanwhile
    ? `   | SELECT 1 meanwhile p50 ${meanwhile.p50.toFixed(1)} ms  p99 ${meanwhile.p99.toFixed(1)} ms (${meanwhile.samples} samples)`
    : '';
  console.log(
    `${replicas} replica${replicas > 1 ? 's' : ''}: ${seconds.toFixed(1)} s, ${(chunks / seconds).toFixed(0)} chunks/s, chunks written per replica ${perReplica.join(' / ')}${api}`,
  );
}
console.log(`two replicas / one: ${((results[2] as number) / (results[1] as number)).toFixed(2)}x`);
await closeEmbedders();
