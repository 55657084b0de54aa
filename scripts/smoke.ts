/**
 * Smoke test of the single binary (run by .ci/run after the unit tests).
 *
 * Builds dist/knode and dist/vendor/, copies them to an empty temporary folder and starts the copy
 * with its data, HOME and documents in temporary folders, on a free port, with the project checkout
 * hidden from it when the machine allows (scripts/binary/launch.ts). Then: the console's page and
 * files at / (embedded); through the HTTP API: register and log in; ingest a PDF, a DOCX, an HTML, a Markdown, a text, an XLSX, a CSV and a JSON file (pdf.js, mammoth, read-excel-file, csv-parse,
 * USE-lite embeddings on ONNX Runtime, its model converted on first use, and sqlite-vec, all from
 * inside the binary); search each through a raw endpoint;
 * ingest and search with a (tiny, generated) ONNX sentence model through transformers.js; load the
 * ngrok agent's addon (opening a tunnel, which then fails for want of a marketplace); generate with the tiny test GGUF through a llama_cpp model (node-llama-cpp from vendor/), both with
 * the model test route and through an endpoint that answers with search results and a summary; stop.
 *
 * Ends with one line, "smoke: PASS ..." or "smoke: FAIL ...", and exits non-zero on failure.
 * Usage: bun scripts/smoke.ts [--no-build] [--keep]   (--keep leaves the temporary folder)
 */

import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnSync } from 'bun';
import pkg from '../package.json' with { type: 'json' };
import { buildDocx, buildPdf } from '../test/fixtures/make-documents.ts';
import { buildXlsx } from '../test/fixtures/make-spreadsheets.ts';
import { launchKnode, type RunningKnode } from './binary/launch.ts';
import { stageBinary } from './binary/stage.ts';
import { makeOnnxEmbedder } from './fixtures/make-onnx-embedder.ts';
import { writeTinyGguf } from './fixtures/make-tiny-gguf.ts';

const PROJECT_ROOT = resolve(import.meta.dir, '..');
const INDEXING_TIMEOUT_MS = 180_000;

/** One sentence per format, each with words no other file has, so a search names its file. */
const DOCUMENTS = {
  'harbour.pdf': 'The lighthouse keeper records every storm that reaches the harbour.',
  'report.docx': 'Quarterly revenue grew fastest in the northern warehouses.',
  'garden.html': 'Tomatoes ripen slowly beside the greenhouse wall.',
  'notes.md': 'Glaciers carve deep valleys over thousands of winters.',
  'recipe.txt': 'Knead the sourdough gently before the oven is hot.',
  'ledger.xlsx': 'Copper kettles were sold at the autumn market.',
  'tides.csv': 'Spring tides flood the salt marsh twice a month.',
  'birds.json': 'Puffins nest in burrows on the northern cliffs.',
} as const;

/** About 700 characters before the recipe's sentence, so that its chunk needs several USE-lite windows. */
const RECIPE_PREAMBLE = Array.from(
  { length: 12 },
  (_, index) => `Step ${index + 1}: weigh the flour, water and salt, mix them by hand and let the bowl rest.`,
).join(' ');

let current = 'setting up';
const done: string[] = [];

async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  current = name;
  const started = performance.now();
  const result = await work();
  const ms = Math.round(performance.now() - started);
  done.push(name);
  console.log(`  ok  ${name} (${ms} ms)`);
  return result;
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** JSON over HTTP against the running binary; any status but `expect` is a failure with the body. */
function client(base: string) {
  let token: string | undefined;
  const call = async <T>(method: string, path: string, body?: unknown, expect = 200): Promise<T> => {
    const response = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(120_000),
    });
    const text = await response.text();
    if (response.status !== expect)
      throw new Error(`${method} ${path} answered ${response.status} (expected ${expect}): ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  return { call, login: (value: string) => (token = value) };
}

async function writeDocuments(folder: string): Promise<void> {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'harbour.pdf'), buildPdf([[DOCUMENTS['harbour.pdf']]], { title: 'Harbour log' }));
  writeFileSync(join(folder, 'report.docx'), await buildDocx([{ heading: 'Report' }, { paragraph: DOCUMENTS['report.docx'] }]));
  writeFileSync(
    join(folder, 'garden.html'),
    `<html><head><title>Garden</title></head><body><p>${DOCUMENTS['garden.html']}</p></body></html>`,
  );
  writeFileSync(join(folder, 'notes.md'), `# Notes\n\n${DOCUMENTS['notes.md']}\n`);
  // Longer than USE-lite's 128 tokens: embedded as pieces, its window counted by the tokenizer the binary embeds.
  writeFileSync(join(folder, 'recipe.txt'), `${RECIPE_PREAMBLE}\n${DOCUMENTS['recipe.txt']}\n`);
  writeFileSync(join(folder, 'ledger.xlsx'), await buildXlsx([{ name: 'Ledger', rows: [['Note'], [DOCUMENTS['ledger.xlsx']]] }]));
  writeFileSync(join(folder, 'tides.csv'), `Note\n"${DOCUMENTS['tides.csv']}"\n`);
  writeFileSync(join(folder, 'birds.json'), JSON.stringify([{ note: DOCUMENTS['birds.json'] }]));
}

interface Dataset {
  id: string;
  ingestion: { files_total: number; files_indexed: number; files_failed: number; files_pending: number };
}
interface QueryAnswer {
  summary: { message: { content: string }; usage: { completion_tokens: number } } | null;
  references?: { documents: { content: string; metadata: Record<string, unknown> }[] };
}

type Api = ReturnType<typeof client>;

async function waitForIndexing(api: Api, datasetId: string, files: number): Promise<void> {
  const deadline = performance.now() + INDEXING_TIMEOUT_MS;
  while (true) {
    const { ingestion } = await api.call<Dataset>('GET', `/datasets/${datasetId}`);
    if (ingestion.files_failed > 0) {
      const listed = await api.call<{ path: string; status: string; error: string | null }[]>('GET', `/datasets/${datasetId}/files`);
      throw new Error(`files failed: ${JSON.stringify(listed.filter((file) => file.status === 'failed'))}`);
    }
    if (ingestion.files_indexed === files) return;
    check(performance.now() < deadline, `indexing did not finish within ${INDEXING_TIMEOUT_MS / 1000} s: ${JSON.stringify(ingestion)}`);
    await Bun.sleep(250);
  }
}

async function exercise(knode: RunningKnode, scratch: string): Promise<void> {
  const api = client(knode.url);
  const documents = join(scratch, 'documents');
  const gguf = join(scratch, 'models', 'tiny.gguf');

  await step('the console at / (its files embedded in the binary)', async () => {
    const page = await fetch(`${knode.url}/`);
    const html = await page.text();
    check(page.status === 200 && html.includes('<div id="app"></div>'), `GET / answered ${page.status}: ${html.slice(0, 200)}`);
    const files = [...html.matchAll(/(?:src|href)="(\/console\/[^"]+)"/g)].map((match) => match[1] as string);
    check(
      files.some((file) => file.endsWith('.js')) && files.some((file) => file.endsWith('.css')),
      `index.html names ${files.join(', ')}`,
    );
    for (const file of files) {
      const response = await fetch(`${knode.url}${file}`);
      const body = await response.arrayBuffer();
      check(response.status === 200 && body.byteLength > 0, `GET ${file} answered ${response.status} (${body.byteLength} bytes)`);
    }
    const setup = await fetch(`${knode.url}/api/v1/auth/setup`);
    check(setup.status === 200, `GET /api/v1/auth/setup answered ${setup.status}`);
  });

  await step('register and log in', async () => {
    const account = { email: 'smoke@example.com', password: 'a long smoke password' };
    await api.call('POST', '/auth/register', { ...account, tenant_name: 'smoke' }, 201);
    const { access_token } = await api.call<{ access_token: string }>('POST', '/auth/login', account);
    api.login(access_token);
  });

  const dataset = await step('ingest a PDF, a DOCX, an HTML, a Markdown, a text, an XLSX, a CSV and a JSON file', async () => {
    await writeDocuments(documents);
    // Spreadsheets and data files are indexed only when the dataset names them.
    const configuration = { ingestionPath: documents, fileTypes: 'pdf,docx,html,md,txt,xlsx,csv,json' };
    const created = await api.call<Dataset>('POST', '/datasets/', { name: 'smoke', dtype: 'local_file', configuration }, 201);
    await waitForIndexing(api, created.id, Object.keys(DOCUMENTS).length);
    // USE-lite ran on ONNX Runtime (its model converted into the cache), not on the tfjs fallback.
    check(!/falls back to tfjs/.test(knode.log()), `USE-lite fell back to tfjs in the binary:\n${knode.log()}`);
    const converted = [...new Bun.Glob('*/use-lite.onnx').scanSync({ cwd: join(scratch, 'home', '.cache', 'knode', 'models') })];
    check(converted.length === 1, `expected the converted USE-lite model in the cache, found ${JSON.stringify(converted)}`);
    return created;
  });

  await step('search every file through a raw endpoint', async () => {
    await api.call('POST', '/endpoints/', { name: 'Smoke search', slug: 'smoke-raw', dataset_id: dataset.id, response_type: 'raw' }, 201);
    for (const [file, sentence] of Object.entries(DOCUMENTS)) {
      const answer = await api.call<QueryAnswer>('POST', '/endpoints/smoke-raw/query', {
        messages: sentence,
        similarity_threshold: 0,
        limit: 1,
      });
      const top = answer.references?.documents[0];
      check(top?.content.includes(sentence), `searching for the text of ${file} found ${JSON.stringify(top)}`);
    }
  });

  await step('ingest and search with an ONNX embedder (transformers.js, ONNX Runtime)', async () => {
    const folder = join(scratch, 'onnx-documents');
    mkdirSync(folder, { recursive: true });
    // Longer than USE-lite's 128 tokens: embedded as pieces, its window counted by the tokenizer the binary embeds.
    writeFileSync(join(folder, 'recipe.txt'), `${RECIPE_PREAMBLE}\n${DOCUMENTS['recipe.txt']}\n`);
    const onnx = await makeOnnxEmbedder(join(scratch, 'models', 'onnx-embedder'));
    const created = await api.call<Dataset>(
      'POST',
      '/datasets/',
      { name: 'smoke-onnx', dtype: 'local_file', configuration: { ingestionPath: folder, embedder: `transformers:${onnx.dir}` } },
      201,
    );
    await waitForIndexing(api, created.id, 1);
    await api.call('POST', '/endpoints/', { name: 'Smoke ONNX', slug: 'smoke-onnx', dataset_id: created.id, response_type: 'raw' }, 201);
    const answer = await api.call<QueryAnswer>('POST', '/endpoints/smoke-onnx/query', {
      messages: 'sourdough oven',
      similarity_threshold: 0,
      limit: 1,
    });
    check(answer.references?.documents[0]?.content.includes('sourdough'), `ONNX search found ${JSON.stringify(answer.references)}`);
  });

  await step('load the tunnel library (the ngrok agent addon)', async () => {
    // Opening a tunnel first loads the library (404 "not configured" when it cannot), then fails here for
    // want of a marketplace: any other answer shows the addon loaded. Settings need no credentials in
    // development mode.
    const response = await fetch(`${knode.url}/api/v1/settings/proxy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tunnel_token: 'smoke-test-token-that-is-never-used' }),
    });
    const body = await response.text();
    check(!(response.status === 404 && /not configured/i.test(body)), `the tunnel library did not load: ${response.status} ${body}`);
  });

  const model = await step('add the tiny GGUF as a llama_cpp model', async () => {
    mkdirSync(join(scratch, 'models'), { recursive: true });
    writeTinyGguf(gguf);
    const created = await api.call<{ id: string }>(
      'POST',
      '/models/',
      { name: 'tiny', dtype: 'llama_cpp', configuration: { model_path: gguf } },
      201,
    );
    const health = await api.call<{ healthy: boolean; message: string }>('GET', `/models/${created.id}/health`);
    check(health.healthy, `model health: ${health.message}`);
    return created;
  });

  await step('generate with the model test route', async () => {
    const summary = await api.call<NonNullable<QueryAnswer['summary']>>('POST', `/models/${model.id}/test`, {
      prompt: 'Say hello.',
      max_tokens: 8,
    });
    check(summary.usage.completion_tokens > 0 && summary.message.content.length > 0, `no text generated: ${JSON.stringify(summary)}`);
  });

  await step('search and generate through a summary endpoint', async () => {
    await api.call(
      'POST',
      '/endpoints/',
      { name: 'Smoke answers', slug: 'smoke-both', dataset_id: dataset.id, model_id: model.id, response_type: 'both' },
      201,
    );
    const answer = await api.call<QueryAnswer>('POST', '/endpoints/smoke-both/query', {
      messages: 'Who records the storms?',
      similarity_threshold: 0,
      max_tokens: 8,
      stop_sequences: [],
    });
    check((answer.references?.documents.length ?? 0) > 0, `no references: ${JSON.stringify(answer)}`);
    check(answer.summary && answer.summary.usage.completion_tokens > 0, `no summary: ${JSON.stringify(answer)}`);
  });

  await step('scrape /metrics (prom-client, open to this machine in development mode)', async () => {
    const response = await fetch(`${knode.url}/metrics`);
    const text = await response.text();
    check(response.status === 200, `GET /metrics answered ${response.status}: ${text.slice(0, 200)}`);
    for (const family of ['knode_http_requests_total', 'knode_query_duration_seconds_count', 'knode_embedded_chunks_total']) {
      check(text.includes(family), `GET /metrics has no ${family}`);
    }
  });
}

async function main(): Promise<boolean> {
  const build = process.argv.includes('--no-build') === false;
  const keep = process.argv.includes('--keep');
  const scratch = mkdtempSync(join(tmpdir(), 'knode-smoke-'));
  let knode: RunningKnode | undefined;
  try {
    if (build) {
      await step('build', async () => {
        const result = spawnSync(['npm', 'run', '--silent', 'build'], { cwd: PROJECT_ROOT, stdout: 'inherit', stderr: 'inherit' });
        check(result.exitCode === 0, `npm run build failed (exit ${result.exitCode})`);
      });
    }
    const binary = await step('copy dist/knode and dist/vendor/ to an empty folder', async () =>
      stageBinary(join(PROJECT_ROOT, 'dist'), join(scratch, 'knode')),
    );

    await step('knode --version', async () => {
      const result = spawnSync([binary, '--version'], {
        cwd: scratch,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(scratch, 'home') },
      });
      const printed = result.stdout.toString().trim();
      check(result.exitCode === 0 && printed === pkg.version, `--version printed ${JSON.stringify(printed)} (exit ${result.exitCode})`);
    });

    knode = await step('start (health answers)', () =>
      launchKnode({
        binary,
        scratch,
        // The indexing polls would count against the general API limits: turn them off.
        env: { SVC_INGESTION_ROOTS: scratch, SVC_RATE_LIMIT_PER_MINUTE: '0', SVC_RATE_LIMIT_PER_HOUR: '0' },
        hide: PROJECT_ROOT,
      }),
    );
    console.log(
      `      ${knode.hidden ? `the checkout (${PROJECT_ROOT}) is hidden from the binary` : 'unshare is not permitted here: the checkout stays visible to the binary'}`,
    );

    await exercise(knode, scratch);

    await step('stop', async () => {
      const started = performance.now();
      const { code, signal } = await (knode as RunningKnode).stop();
      const ms = Math.round(performance.now() - started);
      check(code === 0, `knode did not exit cleanly after SIGTERM (code ${code}, signal ${signal}, after ${ms} ms)`);
    });
    check(existsSync(join(scratch, 'home', '.cache', 'knode', 'native')), 'native files were not written to the cache under HOME');
    console.log(`smoke: PASS (${done.length} steps${knode.hidden ? ', checkout hidden' : ''})`);
    return true;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (knode) {
      await knode.stop();
      console.log(`--- knode log (last 40 lines)\n${knode.log().split('\n').slice(-40).join('\n')}`);
    }
    console.log(`smoke: FAIL at "${current}": ${message}`);
    return false;
  } finally {
    if (keep) console.log(`(kept ${scratch})`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

process.exit((await main()) ? 0 : 1);
