/**
 * Ingestion of a folder, end to end, beside the embedders alone, in one run:
 *
 * 1. Writes N text and Markdown files (default 1,000, ~2,500 characters each) into a fresh folder.
 * 2. Each USE-lite engine alone (tfjs on one thread, then ONNX Runtime as knode runs it; `benchEmbedder` below):
 *    the same files read, chunked and embedded in one process, the way a script would do it with no
 *    watcher, queue, worker threads or database (chunks per second).
 * 3. The pipeline: a real knode process (`bun src/main.ts`, default embedder engine) on a fresh data
 *    directory. A small dataset is indexed first, so the model is loaded before the clock starts; then a
 *    dataset is created on the folder and the clock runs until every chunk has its vector. Meanwhile
 *    GET /api/v1/health and GET /api/v1/datasets/{id} are called every 25 ms over loopback HTTP (and every
 *    fourth time, a search of the dataset, keyword and hybrid by turns), and the process's resident memory
 *    is read from /proc.
 *
 * Reported: chunks per second of each engine alone and of the pipeline; the time until the first file is
 * keyword-searchable, until 90% are, and until every chunk is embedded; peak RSS of the knode process
 * (the kernel's high-water mark, model loading included); the API's latency during the ingest, and
 * knode's own event-loop lag (/metrics); the longest write transaction (knode logs it with its progress). Targets of the indexing issue: 90%
 * searchable in under 15% of the time full embedding takes, peak RSS under 500 MB, health p99 under 50 ms.
 *
 * Usage: bun scripts/bench/ingest.ts [files, default 1000] [--engines=tfjs,onnx] (`--engines=` skips them)
 * BENCH_BUN_FLAGS is passed to the knode process: `BENCH_BUN_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof'`
 * writes a CPU profile of its main thread, where a stalled event loop shows as a long run of samples.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Embedder } from '../../src/embeddings/embedder.ts';
import { UseLiteEmbedder } from '../../src/embeddings/use-lite.ts';
import { chunkDocument } from '../../src/ingestion/chunker.ts';

const args = process.argv.slice(2);
const fileCount = Number(args.find((arg) => !arg.startsWith('--')) ?? 1000);
const engines = (args.find((arg) => arg.startsWith('--engines='))?.slice('--engines='.length) ?? 'tfjs,onnx').split(',').filter(Boolean);
const CHUNK = { chunkSize: 1000, chunkOverlap: 100 };
const POLL_MS = 25;

type Engine = 'tfjs' | 'onnx';

/**
 * The embedder of one engine, alone (src/embeddings/use-lite.ts documents the choice). The one place
 * that knows how an engine is picked: change it here if that API changes.
 */
function benchEmbedder(engine: Engine): Embedder {
  // tfjs on one thread: the baseline the indexing issue's goal is set against (5× faster end to end).
  return new UseLiteEmbedder(engine === 'tfjs' ? { engine, threads: 1 } : { engine });
}

/** tfjs' rate is steady: the first chunks measure it without six minutes of waiting. */
const TFJS_CHUNKS = 800;

const WORDS = (
  'the of and to in is that for it as was with be by on not this are or from at which but have an they ' +
  'document search index knowledge vector model retrieval language sentence paragraph chapter river mountain ' +
  'history science market weather energy policy network system process result analysis method data report'
).split(' ');
let seed = 17;
function word(): string {
  seed = (seed * 16807) % 2147483647;
  return WORDS[seed % WORDS.length] as string;
}
function paragraph(characters: number): string {
  let out = '';
  while (out.length < characters) out += `${word()}${seed % 11 === 0 ? '. ' : ' '}`;
  return `${out.trim()}.`;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Chunks per second of one engine alone, on the chunks the pipeline makes (tfjs: the first TFJS_CHUNKS). */
async function embedderAlone(engine: Engine, all: readonly string[]): Promise<number> {
  const texts = engine === 'tfjs' ? all.slice(0, TFJS_CHUNKS) : all;
  const embedder = benchEmbedder(engine);
  try {
    await embedder.embed(['warm up the model']);
    const started = performance.now();
    for (let i = 0; i < texts.length; i += 64) await embedder.embed(texts.slice(i, i + 64));
    const elapsed = performance.now() - started;
    const rate = texts.length / (elapsed / 1000);
    console.log(`${engine} embedder alone: ${texts.length} chunks in ${seconds(elapsed)} = ${rate.toFixed(0)} chunks/s`);
    return rate;
  } finally {
    await embedder.close?.();
  }
}

/** A knode process on `dataDir`; resolves with its URL once it listens. Its log lines go to `onLine`. */
async function startKnode(root: string, dataDir: string, onLine: (line: string) => void) {
  const child = Bun.spawn(['./node_modules/.bin/bun', ...(process.env.BENCH_BUN_FLAGS?.split(' ').filter(Boolean) ?? []), 'src/main.ts'], {
    cwd: join(import.meta.dir, '../..'),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: root,
      SVC_DATA_DIR: dataDir,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: '0',
      SVC_INGESTION_ROOTS: root,
      SVC_LOG_LEVEL: 'info',
      SVC_RATE_LIMIT_PER_HOUR: '0',
      SVC_RATE_LIMIT_PER_MINUTE: '0',
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const url = await new Promise<string>((resolve, reject) => {
    void (async () => {
      const decoder = new TextDecoder();
      let pending = '';
      let found = false;
      // Read to the end: a pipe nobody reads fills up and blocks the server's logging.
      for await (const chunk of child.stdout) {
        pending += decoder.decode(chunk, { stream: true });
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          onLine(line);
          const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
          if (match?.[1] && !found) {
            found = true;
            resolve(match[1]);
          }
        }
      }
      if (!found) reject(new Error('knode exited before listening'));
    })();
  });
  return { child, url };
}

/** The process's resident set now (and its anonymous and file-backed parts) and its high-water mark, in MB (Linux /proc). */
function memoryOf(pid: number): { rss: number; anon: number; file: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024, peak: kb('VmHWM') / 1024 };
}

interface Counters {
  files_total: number;
  files_searchable: number;
  files_indexed: number;
  files_failed: number;
  chunks: number;
  chunks_embedded: number;
}

const root = mkdtempSync(join(tmpdir(), 'knode-bench-ingest-'));
const folder = join(root, 'docs');
mkdirSync(folder);
for (let i = 0; i < fileCount; i++) {
  const body = [paragraph(800), paragraph(900), paragraph(800)].join('\n\n');
  const markdown = i % 2 === 0;
  writeFileSync(join(folder, `doc-${i}.${markdown ? 'md' : 'txt'}`), markdown ? `# Document ${i}\n\n${body}` : body);
}
const warmFolder = join(root, 'warm');
mkdirSync(warmFolder);
writeFileSync(join(warmFolder, 'warm.txt'), 'A small file, indexed first so that the model is loaded before the clock starts.');

let knode: Awaited<ReturnType<typeof startKnode>> | undefined;
try {
  const texts: string[] = [];
  for (let i = 0; i < fileCount; i++) {
    const name = `doc-${i}.${i % 2 === 0 ? 'md' : 'txt'}`;
    const text = readFileSync(join(folder, name), 'utf8');
    for (const chunk of chunkDocument({ sections: [{ text }] }, CHUNK)) texts.push(chunk.text);
  }
  const alone = new Map<string, number>();
  for (const engine of engines) alone.set(engine, await embedderAlone(engine as Engine, texts));

  let longestWriteMs = 0;
  knode = await startKnode(root, join(root, 'data'), (line) => {
    const match = /"longest_write_ms":(\d+)/.exec(line);
    if (match) longestWriteMs = Math.max(longestWriteMs, Number(match[1]));
  });
  const { url, child } = knode;
  const call = async (method: string, path: string, body?: unknown, token?: string) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return (await response.json()) as Record<string, unknown>;
  };
  await call('POST', '/api/v1/auth/register', { email: 'bench@example.com', password: 'bench-password', tenant_name: 'bench' });
  const token = String((await call('POST', '/api/v1/auth/login', { email: 'bench@example.com', password: 'bench-password' })).access_token);
  const counters = async (id: unknown) => (await call('GET', `/api/v1/datasets/${id}`, undefined, token)).ingestion as Counters;

  const warm = await call(
    'POST',
    '/api/v1/datasets/',
    { name: 'warm', dtype: 'local_file', configuration: { ingestionPath: warmFolder } },
    token,
  );
  while ((await counters(warm.id)).files_indexed < 1) await Bun.sleep(50);

  const ready = memoryOf(child.pid);
  console.log(
    `\nknode ready (model loaded): RSS ${ready.rss.toFixed(0)} MB (${ready.anon.toFixed(0)} anonymous, ${ready.file.toFixed(0)} files), ` +
      `high-water mark ${ready.peak.toFixed(0)} MB`,
  );
  const latencies = { health: [] as number[], dataset: [] as number[], keyword: [] as number[], hybrid: [] as number[] };
  let rssMax = 0;
  const started = performance.now();
  const dataset = await call(
    'POST',
    '/api/v1/datasets/',
    { name: 'bench', dtype: 'local_file', configuration: { ingestionPath: folder, ...CHUNK } },
    token,
  );
  let firstSearchable: number | undefined;
  let mostSearchable: number | undefined;
  let view: Counters;
  for (let poll = 0; ; poll++) {
    // Every fourth poll, a search of the dataset, in keyword and hybrid mode by turns: what a user trying
    // the dataset meanwhile waits (hybrid embeds the question behind the ingestion's batches).
    if (poll % 4 === 0) {
      const mode = poll % 8 === 0 ? 'keyword' : 'hybrid';
      const asked = performance.now();
      await call('POST', `/api/v1/datasets/${dataset.id}/search`, { query: 'river mountain history', mode }, token);
      latencies[mode].push(performance.now() - asked);
    }
    const t0 = performance.now();
    await fetch(`${url}/api/v1/health`);
    const t1 = performance.now();
    view = await counters(dataset.id);
    const t2 = performance.now();
    latencies.health.push(t1 - t0);
    latencies.dataset.push(t2 - t1);
    rssMax = Math.max(rssMax, memoryOf(child.pid).rss);
    if (view.files_searchable > 0) firstSearchable ??= t2 - started;
    if (view.files_searchable + view.files_failed >= 0.9 * fileCount) mostSearchable ??= t2 - started;
    if (view.files_indexed + view.files_failed >= fileCount && view.chunks_embedded === view.chunks) break;
    await Bun.sleep(POLL_MS);
  }
  const allEmbedded = performance.now() - started;
  const memory = memoryOf(child.pid);
  console.log(
    `knode after the ingest: RSS ${memory.rss.toFixed(0)} MB (${memory.anon.toFixed(0)} anonymous, ${memory.file.toFixed(0)} files)`,
  );
  const rate = view.chunks / (allEmbedded / 1000);

  console.log(`\npipeline: ${fileCount} files, ${view.chunks} chunks (${view.files_failed} files failed), default engine`);
  console.log(`  first file keyword-searchable after ${seconds(firstSearchable ?? Number.NaN)}`);
  console.log(
    `  90% of files keyword-searchable after ${seconds(mostSearchable ?? Number.NaN)}: ` +
      `${(((mostSearchable ?? Number.NaN) / allEmbedded) * 100).toFixed(1)}% of the time until all are embedded (target: under 15%)`,
  );
  console.log(`  every chunk embedded after ${seconds(allEmbedded)} = ${rate.toFixed(0)} chunks/s end to end`);
  for (const [engine, aloneRate] of alone) console.log(`  = ${((rate / aloneRate) * 100).toFixed(0)}% of the ${engine} embedder alone`);
  console.log(
    `  peak RSS ${memory.peak.toFixed(0)} MB (kernel high-water mark, model loading included; ` +
      `${rssMax.toFixed(0)} MB at most while sampled during the ingest; target: under 500 MB)`,
  );
  console.log(`  longest write transaction ${longestWriteMs} ms (target: under 200 ms)`);
  const described: Record<keyof typeof latencies, string> = {
    health: 'GET /api/v1/health',
    dataset: 'GET /api/v1/datasets/{id}',
    keyword: 'POST /api/v1/datasets/{id}/search (keyword)',
    hybrid: 'POST /api/v1/datasets/{id}/search (hybrid)',
  };
  for (const [name, values] of Object.entries(latencies) as [keyof typeof latencies, number[]][]) {
    const sorted = [...values].sort((a, b) => a - b);
    console.log(
      `  ${described[name]} during the ingest: ` +
        `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, ` +
        `max ${sorted.at(-1)?.toFixed(1)} ms (${sorted.length} calls${name === 'health' ? '; target: p99 under 50 ms' : ''})`,
    );
  }
  // The same searches once the dataset is indexed: what the ingest itself costs them.
  for (const mode of ['keyword', 'hybrid'] as const) {
    const times: number[] = [];
    for (let i = 0; i < 40; i++) {
      const asked = performance.now();
      await call('POST', `/api/v1/datasets/${dataset.id}/search`, { query: 'river mountain history', mode }, token);
      times.push(performance.now() - asked);
    }
    times.sort((a, b) => a - b);
    console.log(
      `  ${described[mode]} after the ingest: p50 ${percentile(times, 50).toFixed(1)} ms, max ${times.at(-1)?.toFixed(1)} ms (40 calls)`,
    );
  }
  // knode's own view of its main thread (since it started, model loading included): /metrics, open to
  // this machine in development mode. A lag there is time no request could be answered.
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const lag = (name: string) => Number(new RegExp(`^knode_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(metrics)?.[1]) * 1000;
  console.log(
    `  knode's event-loop lag: p50 ${lag('p50').toFixed(1)} ms, p99 ${lag('p99').toFixed(1)} ms, max ${lag('max').toFixed(0)} ms`,
  );
} finally {
  if (knode) {
    knode.child.kill('SIGTERM');
    await knode.child.exited;
  }
  rmSync(root, { recursive: true, force: true });
}
