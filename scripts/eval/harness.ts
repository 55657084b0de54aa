/**
 * Runs the labelled set through a whole knode, in-process, exactly as a client would: a user, a
 * `local_file` dataset on the corpus folder (default chunking, the configured embedder), one raw
 * endpoint, and every query through POST /api/v1/endpoints/{slug}/query in each search mode at each
 * threshold. A query's rank is the position of the first result whose `metadata.source` is its document.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices } from '../../src/services.ts';
import type { EvalSet } from './corpus.ts';
import type { QueryStyle } from './queries.ts';

export const MODES = ['hybrid', 'keyword', 'vector'] as const;
export const THRESHOLDS = [0, 0.5] as const;
export type Mode = (typeof MODES)[number];

export interface Figures {
  mode: Mode;
  threshold: number;
  queries: number;
  recallAt1: number;
  recallAt5: number;
  mrrAt10: number;
  /** Share of unanswerable questions answered with no document at all. */
  unanswerableEmpty: number;
  /** Documents returned on average to an unanswerable question (limit 10). */
  unanswerableMeanDocuments: number;
  /** The same two for the technical unanswerable questions alone. */
  technicalEmpty: number;
  technicalMeanDocuments: number;
  /** Recall@5 by query style and by the relevant document's format, to see where misses come from. */
  recallAt5ByStyle: Partial<Record<QueryStyle, number>>;
  recallAt5ByFormat: Record<string, number>;
  /** Mean time of one query, milliseconds. */
  meanQueryMs: number;
  /** Per known-item query (same order as the set): the rank of its document, null when not in the 10. */
  ranks: (number | null)[];
  /** Per unanswerable question: how many documents came back. */
  unanswerableReturned: number[];
}

export interface Evaluation {
  fingerprint: string;
  embedder: string;
  files: number;
  chunks: number;
  failedFiles: { path: string; error: string | null }[];
  /** Seconds from the dataset's creation to the last file indexed (when this run indexed it). */
  indexingSeconds: number;
  reusedIndex: boolean;
  figures: Figures[];
}

export const LIMIT = 10;
const USER = { email: 'eval@example.com', password: 'evaluation password', tenant_name: 'eval' };
export const SLUG = 'retrieval-eval';

export interface EvaluateOptions {
  /** knode's data directory: reused when it already holds this set's index. */
  dataDir: string;
  /** A folder containing the corpus: the ingestion root. */
  root: string;
  embedder?: string;
  modes?: readonly Mode[];
  log?: (line: string) => void;
  /** Fit the dataset's own calibration before asking (default), as knode does once a dataset is indexed. */
  calibrate?: boolean;
}

/** A whole knode with the corpus indexed and the evaluation endpoint made, ready to be asked. */
export interface OpenedEvaluation {
  readonly call: Call;
  readonly token: string;
  readonly datasetId: string;
  readonly indexingSeconds: number;
  readonly reusedIndex: boolean;
  readonly chunks: number;
  readonly failedFiles: { path: string; error: string | null }[];
  close(): Promise<void>;
}

/** Starts knode on `options.dataDir`, indexes `corpus` (or finds it indexed) and makes the raw endpoint. */
export async function openEvaluation(
  corpus: { dir: string; files: readonly unknown[] },
  options: Omit<EvaluateOptions, 'modes'>,
): Promise<OpenedEvaluation> {
  const log = options.log ?? (() => {});
  const embedder = options.embedder ?? 'use-lite';
  const config = loadConfig({
    SVC_DATA_DIR: options.dataDir,
    SVC_LOG_LEVEL: 'warn',
    SVC_INGESTION_ROOTS: options.root,
    SVC_EMBEDDER: embedder,
    SVC_RATE_LIMIT_PER_HOUR: '0',
    SVC_RATE_LIMIT_PER_MINUTE: '0',
  });
  const services = await createServices(config);
  const app = await buildApp(services);
  await app.ready();
  const close = async () => {
    await app.close();
    await services.close();
  };
  try {
    const call = request(app);
    const token = await logIn(call);
    const { datasetId, indexingSeconds, reusedIndex } = await indexCorpus(call, token, corpus, options.dataDir, log);
    // What a user gets once a dataset is indexed: its own calibration, fitted now (again, on a reused index:
    // the fit may have changed) rather than when the calibrator's timer comes by (datasets/calibrator.ts).
    // `calibrate: false` keeps the shipped one.
    if (options.calibrate !== false) await services.calibrator.refit(datasetId);
    else await services.calibrator.stop(); // nor by its timer, in the middle of the questions
    const view = await call('GET', `/api/v1/datasets/${datasetId}`, token);
    log(`calibration: ${JSON.stringify((view as { search: unknown }).search)}`);
    // Without ?limit the route answers every file as a plain array.
    const files = (await call('GET', `/api/v1/datasets/${datasetId}/files`, token)) as unknown as {
      path: string;
      status: string;
      error: string | null;
    }[];
    const failedFiles = files.filter((file) => file.status === 'failed').map(({ path, error }) => ({ path, error }));
    if ((await app.inject({ method: 'GET', url: `/api/v1/endpoints/${SLUG}`, headers: bearer(token) })).statusCode === 404)
      await call('POST', '/api/v1/endpoints/', token, {
        name: 'Retrieval evaluation',
        slug: SLUG,
        dataset_id: datasetId,
        response_type: 'raw',
      });
    const ingestion = (view as { ingestion: { chunks: number } }).ingestion;
    return { call, token, datasetId, indexingSeconds, reusedIndex, chunks: ingestion.chunks, failedFiles, close };
  } catch (error) {
    await close();
    throw error;
  }
}

export async function evaluate(set: EvalSet, options: EvaluateOptions): Promise<Evaluation> {
  const log = options.log ?? (() => {});
  const embedder = options.embedder ?? 'use-lite';
  const opened = await openEvaluation(set, options);
  const { call, token } = opened;
  try {
    const figures: Figures[] = [];
    for (const mode of options.modes ?? MODES) {
      for (const threshold of THRESHOLDS) {
        figures.push(await measure(call, token, set, mode, threshold));
        const f = figures.at(-1) as Figures;
        log(`${mode} @ ${threshold}: R@1 ${f.recallAt1.toFixed(3)}  R@5 ${f.recallAt5.toFixed(3)}  MRR@10 ${f.mrrAt10.toFixed(3)}`);
      }
    }
    return {
      fingerprint: set.fingerprint,
      embedder,
      files: set.files.length,
      chunks: opened.chunks,
      failedFiles: opened.failedFiles,
      indexingSeconds: opened.indexingSeconds,
      reusedIndex: opened.reusedIndex,
      figures,
    };
  } finally {
    await opened.close();
  }
}

export type Call = (method: 'GET' | 'POST', url: string, token?: string, payload?: object) => Promise<Record<string, unknown>>;

function bearer(token?: string): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

function request(app: FastifyInstance): Call {
  return async (method, url, token, payload) => {
    const response = await app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
    if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json();
  };
}

/** Registers the evaluation user on a fresh data directory, or logs in on a reused one. */
async function logIn(call: Call): Promise<string> {
  await call('POST', '/api/v1/auth/register', undefined, USER).catch((error: Error) => {
    if (!/: 409 /.test(error.message)) throw error;
  });
  const login = await call('POST', '/api/v1/auth/login', undefined, { email: USER.email, password: USER.password });
  return String(login.access_token);
}

// Written once the whole corpus is indexed: a later run on the same data directory reports the first
// run's indexing time instead of the few seconds it takes to find nothing changed.
const INDEXED_MARK = 'eval-indexed.json';

async function indexCorpus(
  call: Call,
  token: string,
  set: { dir: string; files: readonly unknown[] },
  dataDir: string,
  log: (line: string) => void,
): Promise<{ datasetId: string; indexingSeconds: number; reusedIndex: boolean }> {
  const datasets = (await call('GET', '/api/v1/datasets/', token)) as unknown as { id: string; name: string }[];
  const existing = datasets.find((dataset) => dataset.name === 'eval');
  const started = performance.now();
  const datasetId =
    existing?.id ??
    String(
      (await call('POST', '/api/v1/datasets/', token, { name: 'eval', dtype: 'local_file', configuration: { ingestionPath: set.dir } })).id,
    );
  let lastLog = 0;
  for (;;) {
    const view = (await call('GET', `/api/v1/datasets/${datasetId}`, token)) as {
      status: string;
      error: string | null;
      ingestion: { files_total: number; files_indexed: number; files_pending: number; files_failed: number; chunks: number };
    };
    const counts = view.ingestion;
    if (view.status === 'error') throw new Error(`dataset in error: ${view.error}`);
    const done = counts.files_indexed + counts.files_failed;
    if (counts.files_total >= set.files.length && counts.files_pending === 0 && done >= set.files.length) break;
    if (performance.now() - lastLog > 15_000) {
      lastLog = performance.now();
      log(`indexing: ${done}/${set.files.length} files, ${counts.chunks} chunks, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    await Bun.sleep(200);
  }
  const seconds = (performance.now() - started) / 1000;
  const mark = join(dataDir, INDEXED_MARK);
  if (existing && existsSync(mark))
    return { datasetId, indexingSeconds: JSON.parse(readFileSync(mark, 'utf8')).seconds, reusedIndex: true };
  writeFileSync(mark, JSON.stringify({ seconds }));
  return { datasetId, indexingSeconds: seconds, reusedIndex: false };
}

interface Answer {
  references?: { documents: { metadata: { source?: string } }[] };
}

async function ask(call: Call, token: string, query: string, mode: Mode, threshold: number): Promise<string[]> {
  const answer = (await call('POST', `/api/v1/endpoints/${SLUG}/query`, token, {
    messages: query,
    limit: LIMIT,
    similarity_threshold: threshold,
    extras: { reference_options: { mode } },
  })) as Answer;
  return (answer.references?.documents ?? []).map((document) => String(document.metadata.source));
}

async function measure(call: Call, token: string, set: EvalSet, mode: Mode, threshold: number): Promise<Figures> {
  const formatOf = new Map(set.files.map((file) => [file.path, file.format]));
  const ranks: { rank: number; style: QueryStyle; format: string }[] = [];
  const started = performance.now();
  for (const query of set.queries) {
    const sources = await ask(call, token, query.query, mode, threshold);
    const index = sources.indexOf(query.relevant);
    ranks.push({ rank: index < 0 ? Number.POSITIVE_INFINITY : index + 1, style: query.style, format: formatOf.get(query.relevant) ?? '?' });
  }
  const returned: number[] = [];
  for (const { question } of set.unanswerable) returned.push((await ask(call, token, question, mode, threshold)).length);
  const technical = returned.filter((_, i) => set.unanswerable[i]?.technical);
  const empty = (counts: readonly number[]) => round(counts.filter((count) => count === 0).length / Math.max(1, counts.length));
  const mean = (counts: readonly number[]) => round(counts.reduce((sum, count) => sum + count, 0) / Math.max(1, counts.length));
  const meanQueryMs = (performance.now() - started) / (set.queries.length + set.unanswerable.length);

  const share = (items: readonly { rank: number }[], k: number) =>
    items.filter((item) => item.rank <= k).length / Math.max(1, items.length);
  const by = <K extends string>(key: (item: (typeof ranks)[number]) => K) => {
    const groups = new Map<K, typeof ranks>();
    for (const item of ranks) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
    return Object.fromEntries([...groups].sort(([a], [b]) => a.localeCompare(b)).map(([name, items]) => [name, round(share(items, 5))]));
  };
  return {
    mode,
    threshold,
    queries: ranks.length,
    recallAt1: round(share(ranks, 1)),
    recallAt5: round(share(ranks, 5)),
    mrrAt10: round(ranks.reduce((sum, { rank }) => sum + (rank <= 10 ? 1 / rank : 0), 0) / Math.max(1, ranks.length)),
    unanswerableEmpty: empty(returned),
    unanswerableMeanDocuments: mean(returned),
    technicalEmpty: empty(technical),
    technicalMeanDocuments: mean(technical),
    recallAt5ByStyle: by((item) => item.style),
    recallAt5ByFormat: by((item) => item.format),
    meanQueryMs: round(meanQueryMs, 1),
    ranks: ranks.map(({ rank }) => (Number.isFinite(rank) ? rank : null)),
    unanswerableReturned: returned,
  };
}

function round(value: number, digits = 3): number {
  return Number(value.toFixed(digits));
}

/** The table people read: one line per mode and threshold. */
export function formatTable(evaluation: Evaluation): string {
  const header =
    '| mode | threshold | recall@1 | recall@5 | MRR@10 | unanswerable: none returned | mean documents | technical only: none returned | mean documents |';
  const rows = evaluation.figures.map((f) =>
    [
      f.mode,
      f.threshold,
      f.recallAt1.toFixed(2),
      f.recallAt5.toFixed(2),
      f.mrrAt10.toFixed(2),
      f.unanswerableEmpty.toFixed(2),
      f.unanswerableMeanDocuments.toFixed(1),
      f.technicalEmpty.toFixed(2),
      f.technicalMeanDocuments.toFixed(1),
    ].join(' | '),
  );
  return [header, '|---|---|---|---|---|---|---|---|---|', ...rows.map((row) => `| ${row} |`)].join('\n');
}
