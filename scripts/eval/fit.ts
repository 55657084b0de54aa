/**
 * Fits the calibration of src/vectors/calibration.ts on the evaluation set: for every question and search
 * mode, the candidates the store considers (with their BM25 and cosine evidence, exactly as a query sees
 * them) are labelled relevant when they come from the question's document, and one logistic model per
 * mode is fitted (Newton's method, a little L2: src/vectors/logistic.ts). Prints a two-fold cross-validation of the fitted ranking
 * at thresholds 0 and 0.5, then the constants to paste into calibration.ts.
 *
 * Usage: bun scripts/eval/fit.ts [--embedder use-lite] [--positive-weight 10] [--features hybrid=strength,held,...]
 *                                [--out constants.json]
 *   --features  a mode's features instead of the shipped ones (an experiment; repeat per mode, `;`-separated)
 *   --out       also writes the constants as a Calibration (JSON), which described/tune-fit.ts --calibration reads
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../../src/db/database.ts';
import { closeEmbedders, createEmbedder } from '../../src/embeddings/embedder.ts';
import type { Calibration, Evidence, Feature, LogisticModel } from '../../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../../src/vectors/extension.ts';
import { fitLogistic } from '../../src/vectors/logistic.ts';
import { type Candidate, evidenceOf, type QueryFacts, rank, type SearchMode } from '../../src/vectors/ranking.ts';
import { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import { buildEvalSet, DEFAULT_CACHE } from './corpus.ts';
import { evaluate } from './harness.ts';

/** Why 10: see calibration.ts; it places 0.5 where recall@5 keeps 95% and most unanswerable questions get nothing. */
const FIT_POSITIVE_WEIGHT = 10;
/** The `limit` of the evaluation's queries: the candidates are those a search of 10 results gathers. */
const LIMIT = 10;
const SHIPPED_FEATURES: Record<SearchMode, readonly Feature[]> = {
  keyword: ['strength', 'relative', 'coverage'],
  vector: ['cosine', 'cosineGap'],
  hybrid: ['strength', 'relative', 'coverage', 'cosine', 'cosineGap'],
};
const MODES: readonly SearchMode[] = ['hybrid', 'keyword', 'vector'];

const { values } = parseArgs({
  options: {
    embedder: { type: 'string', default: 'use-lite' },
    'positive-weight': { type: 'string', default: String(FIT_POSITIVE_WEIGHT) },
    features: { type: 'string', default: '' },
    out: { type: 'string', default: '' },
  },
});
const positiveWeight = Number(values['positive-weight']);
const FEATURES: Record<SearchMode, readonly Feature[]> = { ...SHIPPED_FEATURES };
for (const entry of values.features.split(';').filter(Boolean)) {
  const [mode, list = ''] = entry.split('=');
  if (!MODES.includes(mode as SearchMode)) throw new Error(`--features takes mode=feature,feature;... (modes ${MODES.join(', ')})`);
  FEATURES[mode as SearchMode] = list.split(',') as Feature[];
}

mkdirSync(DEFAULT_CACHE, { recursive: true });
const set = await buildEvalSet('full', DEFAULT_CACHE);
const dataDir = join(DEFAULT_CACHE, `index-full-${set.corpusFingerprint}-${values.embedder.replace(/[^a-zA-Z0-9]+/g, '-')}`);
mkdirSync(dataDir, { recursive: true });
// Indexes the corpus when needed (and upgrades an older index), asking no question.
await evaluate(set, { dataDir, root: DEFAULT_CACHE, embedder: values.embedder, modes: [], log: (line) => console.log(line) });

interface Question {
  text: string;
  /** The relevant document's path, or null for a question the corpus cannot answer. */
  relevant: string | null;
}
const questions: Question[] = [
  ...set.queries.map((query) => ({ text: query.query, relevant: query.relevant })),
  ...set.unanswerable.map((question) => ({ text: question.question, relevant: null })),
];
const vectors = await queryVectors(questions.map((question) => question.text));

const database = await openDatabase(dataDir, [vectorExtensionPath()]);
const store = new SqliteVectorStore(database);
const datasetId = await database.exclusive(
  (sqlite) => (sqlite.query('SELECT dataset_id FROM vector_indexes').get() as { dataset_id: string }).dataset_id,
);
interface Observed {
  question: Question;
  candidates: Candidate[];
  facts: QueryFacts;
  evidence: Evidence[];
}
const observed = new Map<SearchMode, Observed[]>();
for (const mode of MODES) {
  const rows: Observed[] = [];
  for (const [index, question] of questions.entries()) {
    const { candidates, facts } = await store.candidates(datasetId, vectors[index], question.text, mode, LIMIT);
    rows.push({ question, candidates, facts, evidence: evidenceOf(candidates, facts) });
  }
  observed.set(mode, rows);
}
await database.close();
await closeEmbedders();

// Two folds by question, the same for every mode: fit on one half, measure on the other.
const fold = questions.map((_, index) => (hash(index) % 2 === 0 ? 0 : 1));
console.log(`\ntwo-fold cross-validation (${questions.length} questions, positives weighted ${positiveWeight}):`);
for (const mode of MODES) {
  const rows = observed.get(mode) as Observed[];
  for (const threshold of [0, 0.5]) {
    const figures = [0, 1].map((held) => {
      const model = fit(
        rows.filter((_, index) => fold[index] !== held),
        FEATURES[mode],
      );
      return measure(
        rows.filter((_, index) => fold[index] === held),
        mode,
        model,
        threshold,
      );
    });
    const mean = (key: keyof Measured) => ((figures[0]?.[key] ?? 0) + (figures[1]?.[key] ?? 0)) / 2;
    console.log(
      `  ${mode.padEnd(7)} @${threshold}: R@1 ${mean('recallAt1').toFixed(3)}  R@5 ${mean('recallAt5').toFixed(3)}  MRR@10 ${mean('mrr').toFixed(3)}  ` +
        `unanswerable with no documents ${mean('unanswerableEmpty').toFixed(2)}`,
    );
  }
}

console.log(`\nconstants for src/vectors/calibration.ts (embedder ${values.embedder}, fitted on every question):`);
const constants: Record<string, LogisticModel> = {};
for (const mode of MODES) {
  constants[mode] = fit(observed.get(mode) as Observed[], FEATURES[mode]);
  console.log(`  ${mode}: ${JSON.stringify(constants[mode])}`);
}
if (values.out) {
  const name = `${values.embedder} fitted ${new Date().toISOString().slice(0, 10)} (${values.features || 'shipped features'})`;
  writeFileSync(values.out, `${JSON.stringify({ name, ...constants } as Calibration, null, 1)}\n`);
  console.log(`written to ${values.out}`);
}

function fit(rows: readonly Observed[], features: readonly Feature[]): LogisticModel {
  const x: number[][] = [];
  const y: number[] = [];
  for (const row of rows) {
    for (const [index, candidate] of row.candidates.entries()) {
      const evidence = row.evidence[index] as Evidence;
      x.push([...features.map((feature) => evidence[feature]), 1]);
      y.push(candidate.fileKey === row.question.relevant ? 1 : 0);
    }
  }
  const weights = fitLogistic(x, y, positiveWeight);
  const model: Record<string, number> = {};
  for (const [index, feature] of features.entries()) model[feature] = round(weights[index] as number);
  return { weights: model, intercept: round(weights[features.length] as number) };
}

interface Measured {
  recallAt1: number;
  recallAt5: number;
  mrr: number;
  unanswerableEmpty: number;
}

function measure(rows: readonly Observed[], mode: SearchMode, model: LogisticModel, threshold: number): Measured {
  const calibration: Calibration = { name: 'fit', keyword: model, vector: model, hybrid: model };
  let recallAt1 = 0;
  let recallAt5 = 0;
  let mrr = 0;
  let known = 0;
  let empty = 0;
  let unanswerable = 0;
  for (const row of rows) {
    const ranked = rank(row.candidates, row.facts, mode, calibration, threshold).slice(0, 10);
    if (row.question.relevant === null) {
      unanswerable++;
      if (ranked.length === 0) empty++;
      continue;
    }
    known++;
    const files = ranked.map((entry) => row.candidates.find((candidate) => candidate.rowid === entry.rowid)?.fileKey);
    const position = files.indexOf(row.question.relevant) + 1;
    if (position === 1) recallAt1++;
    if (position >= 1 && position <= 5) recallAt5++;
    if (position >= 1) mrr += 1 / position;
  }
  return {
    recallAt1: recallAt1 / known,
    recallAt5: recallAt5 / known,
    mrr: mrr / known,
    unanswerableEmpty: empty / Math.max(1, unanswerable),
  };
}

/** The questions' vectors, computed once per set and embedder (USE-lite takes about a minute for all). */
async function queryVectors(texts: readonly string[]): Promise<Float32Array[]> {
  const file = join(DEFAULT_CACHE, `query-vectors-${set.fingerprint}-${values.embedder.replace(/[^a-zA-Z0-9]+/g, '-')}.json`);
  if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as number[][]).map((vector) => Float32Array.from(vector));
  const embedder = await createEmbedder(values.embedder, { dataDir, allowDownload: false });
  const vectors = await embedder.embed([...texts]);
  writeFileSync(file, JSON.stringify(vectors.map((vector) => Array.from(vector))));
  return vectors;
}

function hash(index: number): number {
  return (Math.imul(index + 1, 2654435761) >>> 0) % 1000;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
