/**
 * Cluster mode's shared embedding (src/ingestion/shared-embedding.ts): how fast one and two replicas embed
 * one dataset, in chunks per second from the first window claimed to the last file `indexed`.
 *
 * The store is the PostgreSQL one with its real pgvector writes, on PGlite in this process (Debian's
 * server has no pgvector, docs/STACK.md), and the replicas are two SharedEmbedding in this process, each
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
 * Usage: bun scripts/bench/cluster-embed.ts [chunks, default 3000] [--embedder=double|use-lite] [--dimension=64]
 */
import { sql } from 'kysely';
import pino from 'pino';
import { PostgresEmbeddingWindows } from '../../src/coordination/postgres/embedding-windows.ts';
import { closeEmbedders, createEmbedder, type Embedder } from '../../src/embeddings/embedder.ts';
import { EmbeddingScheduler } from '../../src/ingestion/embedding-scheduler.ts';
import { FileRepository } from '../../src/ingestion/files-repository.ts';
import { SharedEmbedding } from '../../src/ingestion/shared-embedding.ts';
import { PostgresVectorStore } from '../../src/vectors/postgres/store.ts';
import type { ChunkText } from '../../src/vectors/store.ts';
import { startPglite } from '../../test/helpers/pglite.ts';

const args = process.argv.slice(2);
const chunks = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 3000);
const dimension = Number(args.find((arg) => arg.startsWith('--dimension='))?.slice('--dimension='.length) ?? 64);
const embedderKind = args.find((arg) => arg.startsWith('--embedder='))?.slice('--embedder='.length) ?? 'double';
const CHUNKS_PER_FILE = 250;
const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });

const WORDS = ['river', 'bank', 'loan', 'stone', 'bridge', 'market', 'rate', 'water', 'ledger', 'harbour', 'grain', 'tide'];

function text(file: number, chunk: number): string {
  const words: string[] = [];
  for (let index = 0; index < 120; index++) words.push(WORDS[(file * 7 + chunk * 13 + index * 5) % WORDS.length] as string);
  return `file ${file} chunk ${chunk}: ${words.join(' ')}`;
}

/** The embedding double: about a second per slice of 64 texts, spent elsewhere (a server), not on this process's cores. */
function doubleEmbedder(dimension: number): Embedder {
  return {
    id: 'embedding-double',
    dimension,
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

async function run(replicas: number, embedder: Embedder): Promise<{ seconds: number; perReplica: number[] }> {
  const postgres = await startPglite();
  const store = await PostgresVectorStore.open(postgres.db);
  try {
    await sql`ALTER TABLE dataset_files DROP CONSTRAINT dataset_files_dataset_id_fkey`.execute(postgres.db);
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
        VALUES (${datasetId}, ${path}, 'searchable', ${count}, 0, 1, ${new Date().toISOString()})`.execute(postgres.db);
    }
    // replica-0 holds the dataset; each replica is alive (its liveness lease), as in a cluster.
    await sql`
      INSERT INTO coordination_leases (name, holder, token, acquired_at, expires_at)
      VALUES (${`dataset:${datasetId}`}, 'replica-0', 1, clock_timestamp(), clock_timestamp() + interval '1 hour'),
        ('replica:replica-0', 'replica-0', 1, clock_timestamp(), clock_timestamp() + interval '1 hour'),
        ('replica:replica-1', 'replica-1', 1, clock_timestamp(), clock_timestamp() + interval '1 hour')`.execute(postgres.db);
    const started = performance.now();
    const shared = Array.from({ length: replicas }, (_, index) => {
      const scheduler = new EmbeddingScheduler({ concurrency: 2, slice: { texts: 64, characters: 16_000 } });
      return new SharedEmbedding({
        windows: new PostgresEmbeddingWindows(postgres.db, { claimer: `replica-${index}` }),
        store,
        files: new FileRepository(postgres.db),
        db: postgres.db,
        log,
        datasets: async () => [datasetId],
        embedderOf: async () => embedder,
        holds: () => index === 0,
        embed: (id, used, texts, signal) => scheduler.embed(id, used, texts, signal),
        mayEmbed: () => true,
        progressOf: () => undefined,
        window: { texts: 256, characters: 64_000 },
        windowsInFlight: 2,
        pollMs: 50,
      });
    });
    for (;;) {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM dataset_files WHERE dataset_id = ${datasetId} AND status <> 'indexed'`.execute(postgres.db);
      if (rows[0]?.n === 0) break;
      await Bun.sleep(50);
    }
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(shared.map((replica) => replica.stop()));
    return { seconds, perReplica: shared.map((replica) => replica.written.chunks) };
  } finally {
    await store.close();
    await postgres.close();
  }
}

const embedder =
  embedderKind === 'use-lite' ? await createEmbedder('use-lite', { dataDir: '/tmp', allowDownload: false }) : doubleEmbedder(dimension);
console.log(
  `${chunks} chunks in files of ${CHUNKS_PER_FILE}, embedder ${embedder.id} (${embedder.dimension} dimensions), PGlite with pgvector`,
);
if (embedderKind === 'use-lite') await embedder.embed(['warm up']);
const results: Record<number, number> = {};
for (const replicas of [1, 2]) {
  const { seconds, perReplica } = await run(replicas, embedder);
  results[replicas] = chunks / seconds;
  console.log(
    `${replicas} replica${replicas > 1 ? 's' : ''}: ${seconds.toFixed(1)} s, ${(chunks / seconds).toFixed(0)} chunks/s, chunks written per replica ${perReplica.join(' / ')}`,
  );
}
console.log(`two replicas / one: ${((results[2] as number) / (results[1] as number)).toFixed(2)}x`);
await closeEmbedders();
