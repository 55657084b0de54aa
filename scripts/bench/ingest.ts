/**
 * Ingestion throughput end to end against the embedder alone, and API latency while it runs.
 *
 * 1. Writes N text and Markdown files (default 1,000, ~2,500 characters each) into a fresh folder.
 * 2. Embedder alone: the same files read, chunked and embedded in one process, the way a script
 *    would do it with no watcher, queue, worker threads or database (chunks per second).
 * 3. Pipeline: a whole knode (services + app) on a fresh data directory; a dataset is created on the
 *    folder and the clock runs until every file is indexed (chunks per second). Meanwhile
 *    GET /api/v1/health and GET /api/v1/datasets/{id} are called every 25 ms over loopback HTTP.
 * The ratio pipeline / embedder is the pipeline's efficiency (issue target: at least 80%).
 *
 * Usage: bun scripts/bench/ingest.ts [files, default 1000]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { closeEmbedders, createEmbedder } from '../../src/embeddings/embedder.ts';
import { chunkDocument } from '../../src/ingestion/chunker.ts';
import { createServices } from '../../src/services.ts';

const fileCount = Number(process.argv[2] ?? 1000);
const CHUNK = { chunkSize: 1000, chunkOverlap: 100 };

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

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const root = mkdtempSync(join(tmpdir(), 'knode-bench-ingest-'));
const folder = join(root, 'docs');
mkdirSync(folder);
for (let i = 0; i < fileCount; i++) {
  const body = [paragraph(800), paragraph(900), paragraph(800)].join('\n\n');
  const markdown = i % 2 === 0;
  writeFileSync(join(folder, `doc-${i}.${markdown ? 'md' : 'txt'}`), markdown ? `# Document ${i}\n\n${body}` : body);
}

try {
  // Embedder alone, on exactly the chunks the pipeline will make.
  const texts: string[] = [];
  for (let i = 0; i < fileCount; i++) {
    const name = `doc-${i}.${i % 2 === 0 ? 'md' : 'txt'}`;
    const text = readFileSync(join(folder, name), 'utf8');
    for (const chunk of chunkDocument({ sections: [{ text }] }, CHUNK)) texts.push(chunk.text);
  }
  const embedder = await createEmbedder('use-lite', { dataDir: root, allowDownload: false });
  await embedder.embed(['warm up the model']);
  const aloneStart = performance.now();
  for (let i = 0; i < texts.length; i += 64) await embedder.embed(texts.slice(i, i + 64));
  const aloneSeconds = (performance.now() - aloneStart) / 1000;
  const aloneRate = texts.length / aloneSeconds;
  console.log(`embedder alone: ${texts.length} chunks in ${aloneSeconds.toFixed(1)} s = ${aloneRate.toFixed(0)} chunks/s`);
  await closeEmbedders();

  // The whole pipeline.
  const dataDir = join(root, 'data');
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    SVC_INGESTION_ROOTS: root,
    SVC_PORT: '0',
    SVC_RATE_LIMIT_PER_HOUR: '0',
    SVC_RATE_LIMIT_PER_MINUTE: '0',
  });
  const services = await createServices(config);
  const app = await buildApp(services);
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    }).then((response) => response.json() as Promise<Record<string, unknown>>);
  await post('/api/v1/auth/register', { email: 'bench@example.com', password: 'bench-password', tenant_name: 'bench' });
  const { access_token: token } = await post('/api/v1/auth/login', { email: 'bench@example.com', password: 'bench-password' });
  // Load the model before the clock starts, as the embedder-alone figure did.
  await (await createEmbedder('use-lite', { dataDir, allowDownload: false })).embed(['warm up the model']);

  const latencies: { health: number[]; dataset: number[] } = { health: [], dataset: [] };
  const started = performance.now();
  const dataset = await post(
    '/api/v1/datasets/',
    { name: 'bench', dtype: 'local_file', configuration: { ingestionPath: folder, ...CHUNK } },
    String(token),
  );
  const headers = { authorization: `Bearer ${token}` };
  let chunks = 0;
  for (;;) {
    const t0 = performance.now();
    await fetch(`${base}/api/v1/health`);
    const t1 = performance.now();
    const view = (await (await fetch(`${base}/api/v1/datasets/${dataset.id}`, { headers })).json()) as {
      ingestion: { files_indexed: number; files_failed: number; chunks: number };
    };
    latencies.health.push(t1 - t0);
    latencies.dataset.push(performance.now() - t1);
    if (view.ingestion.files_indexed + view.ingestion.files_failed >= fileCount) {
      chunks = view.ingestion.chunks;
      break;
    }
    await Bun.sleep(25);
  }
  const pipelineSeconds = (performance.now() - started) / 1000;
  const pipelineRate = chunks / pipelineSeconds;
  console.log(`pipeline: ${fileCount} files, ${chunks} chunks in ${pipelineSeconds.toFixed(1)} s = ${pipelineRate.toFixed(0)} chunks/s`);
  console.log(`efficiency: ${((pipelineRate / aloneRate) * 100).toFixed(0)}% of the embedder alone`);
  for (const [name, values] of Object.entries(latencies)) {
    const sorted = [...values].sort((a, b) => a - b);
    console.log(
      `GET ${name === 'health' ? '/api/v1/health' : '/api/v1/datasets/{id}'} during the ingest: ` +
        `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms (${sorted.length} calls)`,
    );
  }
  await app.close();
  await services.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}
