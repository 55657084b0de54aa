/**
 * Runs the described set (build.ts) through a whole knode, as a client asks: every question once per
 * mode at threshold 0 with `limit` 10, keeping each result's document and `similarity_score`. A threshold
 * only drops the tail of that list (the ranking sorts, then drops what is below it, then keeps `limit`), so
 * one pass gives the figures at every threshold: recall@1, recall@5, MRR@10 and the share of unanswerable
 * questions left empty, for the tuning and the held-out halves apart; the trade-off curve (recall@5 kept
 * against unanswerable questions emptied, over thresholds) and the calibration error of the scores.
 *
 * Usage: bun scripts/eval/described/run.ts [--fresh] [--embedder use-lite] [--modes hybrid,keyword,vector]
 *                                          [--label text] [--shipped] [--write-labelled-set]
 *   --shipped   keep the shipped calibration constants (by default the dataset's own is fitted first, as knode does)
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Call, LIMIT, MODES, type Mode, openEvaluation, SLUG } from '../harness.ts';
import {
  buildDescribedSet,
  COMMITTED_DESCRIBED_SET,
  DESCRIBED_CACHE,
  type DescribedQuestion,
  describedLabelledSet,
  type Split,
} from './build.ts';
import { type Answers, describedFigures, formatCurve, formatFigures } from './metrics.ts';

const { values } = parseArgs({
  options: {
    fresh: { type: 'boolean', default: false },
    embedder: { type: 'string', default: 'use-lite' },
    modes: { type: 'string', default: MODES.join(',') },
    label: { type: 'string', default: '' },
    shipped: { type: 'boolean', default: false },
    'write-labelled-set': { type: 'boolean', default: false },
  },
});
const modes = values.modes.split(',') as Mode[];
if (modes.some((mode) => !MODES.includes(mode))) throw new Error(`--modes takes ${MODES.join(', ')}`);

mkdirSync(DESCRIBED_CACHE, { recursive: true });
const set = await buildDescribedSet();
const committed = existsSync(COMMITTED_DESCRIBED_SET)
  ? (JSON.parse(readFileSync(COMMITTED_DESCRIBED_SET, 'utf8')) as { fingerprint: string })
  : undefined;
if (values['write-labelled-set']) {
  writeFileSync(COMMITTED_DESCRIBED_SET, `${JSON.stringify(describedLabelledSet(set), null, 1)}\n`);
  console.log(`wrote ${COMMITTED_DESCRIBED_SET}`);
} else if (committed && committed.fingerprint !== set.fingerprint) {
  console.warn(`warning: this machine's described set (${set.fingerprint}) differs from the committed one (${committed.fingerprint})`);
}
const count = (questions: readonly DescribedQuestion[], split: Split) => questions.filter((q) => q.split === split).length;
console.log(
  `described set ${set.fingerprint}: ${set.files.length} documents indexed; ${set.answerable.length} answerable questions ` +
    `(tuning ${count(set.answerable, 'tuning')}, held-out ${count(set.answerable, 'held-out')}), ${set.unanswerable.length} unanswerable ` +
    `(tuning ${count(set.unanswerable, 'tuning')}, held-out ${count(set.unanswerable, 'held-out')}) (${set.dir})`,
);

const embedderSlug = values.embedder.replace(/[^a-zA-Z0-9]+/g, '-');
const dataDir = join(DESCRIBED_CACHE, `index-described-${set.fingerprint}-${embedderSlug}`);
if (values.fresh) rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const opened = await openEvaluation(set, {
  dataDir,
  root: DESCRIBED_CACHE,
  embedder: values.embedder,
  calibrate: !values.shipped,
  log: (line) => console.log(`  ${line}`),
});
console.log(
  `indexed ${set.files.length} files into ${opened.chunks} chunks in ${opened.indexingSeconds.toFixed(0)} s` +
    `${opened.reusedIndex ? ' (when first indexed)' : ''}; failed: ${opened.failedFiles.length}`,
);
for (const failed of opened.failedFiles) console.log(`  failed ${failed.path}: ${failed.error}`);

const answers: Record<string, Answers> = {};
try {
  for (const mode of modes) {
    const started = performance.now();
    answers[mode] = {
      answerable: await askAll(opened.call, opened.token, set.answerable, mode),
      unanswerable: await askAll(opened.call, opened.token, set.unanswerable, mode),
    };
    const ms = (performance.now() - started) / (set.answerable.length + set.unanswerable.length);
    console.log(`  ${mode}: ${ms.toFixed(1)} ms a question`);
  }
} finally {
  await opened.close();
}

const figures = modes.map((mode) => describedFigures(mode, set, answers[mode] as Answers));
console.log(`\n${formatFigures(figures)}\n`);
for (const f of figures) console.log(`${formatCurve(f)}\n`);
const resultsFile = join(DESCRIBED_CACHE, `results-described-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(
  resultsFile,
  `${JSON.stringify({ label: values.label, date: new Date().toISOString(), fingerprint: set.fingerprint, figures, answers })}\n`,
);
console.log(`figures written to ${resultsFile}`);

async function askAll(call: Call, token: string, questions: readonly DescribedQuestion[], mode: Mode) {
  const results: { source: string; score: number }[][] = [];
  for (const { question } of questions) {
    const answer = (await call('POST', `/api/v1/endpoints/${SLUG}/query`, token, {
      messages: question,
      limit: LIMIT,
      similarity_threshold: 0,
      extras: { reference_options: { mode } },
    })) as { references?: { documents: { similarity_score: number; metadata: { source?: string } }[] } };
    results.push(
      (answer.references?.documents ?? []).map((document) => ({
        source: String(document.metadata.source),
        score: document.similarity_score,
      })),
    );
  }
  return results;
}
