/**
 * What the query pipeline adds to a search: p50/p99 latency and requests per second of
 *   1. the dataset search function called directly in the process (embedding the query included),
 *   2. POST /api/v1/endpoints/{slug}/query of a raw endpoint with three policies (access, rate_limit,
 *      accounting), over loopback HTTP,
 *   3. GET /api/v1/health over loopback HTTP (the HTTP floor),
 * on a dataset of N chunks (default 10,000: 512-dimension unit vectors and ~1,000 characters of text).
 * Issue target: the pipeline adds at most 2 ms p50 to the search itself at 10k chunks.
 *
 * Usage: bun scripts/bench/query.ts [chunks, default 10000] [requests per figure, default 300]
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { DatasetRepository } from '../../src/datasets/repository.ts';
import { DatasetSearchService } from '../../src/datasets/search.ts';
import { loadOrCreateKey } from '../../src/security/key-file.ts';
import { SecretBox } from '../../src/security/secret-box.ts';
import { createServices } from '../../src/services.ts';
import { TenantRepository } from '../../src/tenants/repository.ts';
import { seededRandom } from '../../src/util/seeded-random.ts';
import { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import { replaceFileChunks } from '../../test/helpers/vector-store.ts';

const chunkCount = Number(process.argv[2] ?? 10_000);
const requests = Number(process.argv[3] ?? 300);
const random = seededRandom(3);
const WORDS = 'river mountain history science market weather energy policy network system process result analysis method data report'.split(
  ' ',
);
const text = (words: number) => Array.from({ length: words }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
function unitVector(): Float32Array {
  const vector = Float32Array.from({ length: 512 }, () => random() - 0.5);
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

interface Figure {
  p50: number;
  p99: number;
  perSecond: number;
}

async function measure(run: (i: number) => Promise<unknown>): Promise<Figure> {
  for (let i = 0; i < 20; i++) await run(i); // warm-up
  const times: number[] = [];
  const started = performance.now();
  for (let i = 0; i < requests; i++) {
    const t0 = performance.now();
    await run(i);
    times.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))] ?? Number.NaN;
  return { p50: at(50), p99: at(99), perSecond: requests / seconds };
}

const print = (label: string, figure: Figure) =>
  console.log(
    `${label.padEnd(44)} p50 ${figure.p50.toFixed(2).padStart(7)} ms   p99 ${figure.p99.toFixed(2).padStart(7)} ms   ${figure.perSecond.toFixed(0).padStart(6)} req/s`,
  );

const root = mkdtempSync(join(tmpdir(), 'knode-bench-query-'));
try {
  const folder = join(root, 'docs');
  mkdirSync(folder);
  const dataDir = join(root, 'data');
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    SVC_INGESTION_ROOTS: root,
    SVC_RATE_LIMIT_PER_HOUR: '0',
    SVC_RATE_LIMIT_PER_MINUTE: '0',
  });
  const services = await createServices(config);
  const app = await buildApp(services);
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  const call = async (method: string, path: string, body?: unknown, token?: string) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  await call('POST', '/api/v1/auth/register', { email: 'bench@example.com', password: 'bench-password', tenant_name: 'bench' });
  const token = String((await call('POST', '/api/v1/auth/login', { email: 'bench@example.com', password: 'bench-password' })).access_token);
  const dataset = await call(
    'POST',
    '/api/v1/datasets/',
    { name: 'bench', dtype: 'local_file', configuration: { ingestionPath: folder } },
    token,
  );
  const datasetId = String(dataset.id);
  for (;;) {
    const view = await call('GET', `/api/v1/datasets/${datasetId}`, undefined, token);
    if (view.status === 'running') break;
    await Bun.sleep(50);
  }

  const store = new SqliteVectorStore(services.database);
  for (let file = 0; file * 100 < chunkCount; file++) {
    const chunks = Array.from({ length: Math.min(100, chunkCount - file * 100) }, (_, index) => ({
      content: text(150),
      metadata: { source: `file-${file}.txt`, file_type: 'txt', chunk_index: index },
      embedding: unitVector(),
    }));
    await replaceFileChunks(store, datasetId, `file-${file}.txt`, chunks);
  }

  const endpoint = await call(
    'POST',
    '/api/v1/endpoints/',
    { name: 'bench', slug: 'bench', dataset_id: datasetId, response_type: 'raw' },
    token,
  );
  const policies = [
    { policy_type: 'access', configuration: { mode: 'allow', patterns: ['.*@example\\.com'] } },
    { policy_type: 'rate_limit', configuration: { rate: '1000000/m' } },
    { policy_type: 'accounting', configuration: { enabled: true, require_transaction_token: false } },
  ];
  for (const policy of policies)
    await call('POST', '/api/v1/policies/', { name: policy.policy_type, endpoint_id: endpoint.id, ...policy }, token);

  const tenant = await new TenantRepository(services.database.db).findByName('bench');
  if (!tenant) throw new Error('bench tenant missing');
  const box = new SecretBox(loadOrCreateKey(join(dataDir, 'secret.key'), 32));
  const search = new DatasetSearchService(
    config,
    new DatasetRepository(services.database.db, box),
    store,
    services.searchEngine,
    // The bench embeds with USE-lite: no server is called, but the search takes the outbound module's fetch.
    async () => ({ fetch: globalThis.fetch, scope: 'bench' }),
  );
  const queries = Array.from({ length: 50 }, () => text(6));
  const options = { similarityThreshold: 0, limit: 5, includeMetadata: true, mode: 'hybrid' as const };

  console.log(`${chunkCount} chunks, ${requests} requests per figure, one at a time, hybrid search, limit 5`);
  const direct = await measure((i) => search.search(tenant, datasetId, queries[i % queries.length] as string, options));
  print('search function, called directly', direct);
  const viaHttp = await measure((i) =>
    call('POST', '/api/v1/endpoints/bench/query', { messages: queries[i % queries.length], similarity_threshold: 0, limit: 5 }, token),
  );
  print('POST /query, raw, 3 policies (HTTP)', viaHttp);
  const health = await measure(() => fetch(`${base}/api/v1/health`).then((response) => response.json()));
  print('GET /api/v1/health (HTTP)', health);
  console.log(
    `pipeline overhead at p50: ${(viaHttp.p50 - direct.p50).toFixed(2)} ms (policies, HTTP, validation, serialisation, usage record)`,
  );
  await app.close();
  await services.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}
