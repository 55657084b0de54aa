/**
 * Runs the described set (build.ts) through a whole knode, as a client asks: every question once per
 * mode at threshold 0 with `limit` 10, keeping each result's document and `similarity_score`. A threshold
 * only drops the tail of that list (the ranking sorts, then drops what is below it, then keeps `limit`), so
 * one pass gives the figures at every threshold: recall@1, recall@5, MRR@10 and the share of unanswerable
 * questions left empty, for the tuning and the held-out halves apart; the trade-off curve (recall@5 kept
 * against unanswerable questions emptied, over thresholds) and the calibration error of the scores.
 * `--sample fresh` runs the fresh sample instead (build.ts): its own documents, index and results file,
 * its questions reported under their own split, `fresh`, to be measured once and never tuned on.
 * Both sets are pinned to their committed files (labelled-set.json, fresh-set.json): a run builds the committed
 * selection from this machine's files, and stops if some of it is gone unless --allow-missing.
 *
 * Usage: bun scripts/eval/described/run.ts [--sample described|fresh] [--fresh] [--embedder use-lite]
 *                                          [--modes hybrid,keyword,vector] [--label text] [--shipped]
 *                                          [--allow-missing] [--redraw] [--write-labelled-set]
 *   --sample    which set: the described set (default) or the fresh sample
 *   --fresh     index again even if this set's index is cached (whichever the sample)
 *   --shipped   keep the shipped calibration constants (by default the dataset's own is fitted first, as knode does)
 *   --allow-missing  leave out the committed documents this machine lacks (or describes otherwise) and their questions
 *   --redraw    draw the set again from this machine's documents (seeded) instead of the committed selection
 *   --write-labelled-set  store the set in git: labelled-set.json, or fresh-set.json for the fresh sample
 *                         (with --redraw: a new committed set, made on purpose)
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Call, LIMIT, MODES, type Mode, openEvaluation, SLUG } from '../harness.ts';
import {
  buildDescribedSet,
  committedSetPath,
  DESCRIBED_CACHE,
  type DescribedQuestion,
  describedLabelledSet,
  SAMPLES,
  type Sample,
} from './build.ts';
import { type Answers, describedFigures, formatCurve, formatFigures } from './metrics.ts';
import { PinnedSetError, readCommittedSet } from './selection.ts';

const { values } = parseArgs({
  options: {
    sample: { type: 'string', default: 'described' },
    fresh: { type: 'boolean', default: false },
    embedder: { type: 'string', default: 'use-lite' },
    modes: { type: 'string', default: MODES.join(',') },
    label: { type: 'string', default: '' },
    shipped: { type: 'boolean', default: false },
    'allow-missing': { type: 'boolean', default: false },
    redraw: { type: 'boolean', default: false },
    'write-labelled-set': { type: 'boolean', default: false },
  },
});
const modes = values.modes.split(',') as Mode[];
if (modes.some((mode) => !MODES.includes(mode))) throw new Error(`--modes takes ${MODES.join(', ')}`);
const sample = values.sample as Sample;
if (!SAMPLES.includes(sample)) throw new Error(`--sample takes ${SAMPLES.join(', ')}`);
const name = sample === 'fresh' ? 'fresh sample' : 'described set';

mkdirSync(DESCRIBED_CACHE, { recursive: true });
const set = await buildDescribedSet(sample, { redraw: values.redraw, allowMissing: values['allow-missing'] }).catch((error) => {
  if (!(error instanceof PinnedSetError)) throw error;
  // The list of documents is the message: no stack under it.
  console.error(error.message);
  process.exit(1);
});
const committedPath = committedSetPath(sample);
const pinned = set.selection.drawn ? undefined : set.selection;
if (pinned) {
  console.log(`${name} pinned to ${basename(committedPath)} (committed as ${pinned.committedFingerprint})`);
  if (pinned.missing.length > 0) {
    console.warn(
      `warning: --allow-missing left out ${pinned.missing.length} committed documents this machine cannot give, ` +
        `${pinned.leftOut.questions} questions and ${pinned.leftOut.documents} indexed documents:`,
    );
    for (const line of pinned.missing) console.warn(`  ${line}`);
  }
  if (pinned.changedTexts.length > 0) {
    // Same documents and questions, so the figures still compare; the fingerprint (and the cached index) covers the text.
    console.log(
      `${pinned.changedTexts.length} indexed document${pinned.changedTexts.length === 1 ? "'s" : "s'"} text differs from when ` +
        `committed (same description, so used; the fingerprint covers the text): ${pinned.changedTexts.join(', ')}`,
    );
  }
  if (pinned.overlapping > 0) {
    console.warn(
      `warning: ${pinned.overlapping} of its questions' documents are in the committed described set: it is not fresh; ` +
        'draw it again (--sample fresh --redraw --write-labelled-set)',
    );
  }
} else {
  console.log(`${name} drawn again from this machine's documents (--redraw${existsSync(committedPath) ? '' : `: no ${committedPath}`})`);
}
if (values['write-labelled-set']) {
  writeFileSync(committedPath, `${JSON.stringify(describedLabelledSet(set), null, 1)}\n`);
  console.log(`wrote ${committedPath}`);
} else if (!pinned && (readCommittedSet(committedPath)?.fingerprint ?? set.fingerprint) !== set.fingerprint) {
  console.warn(`warning: this draw (${set.fingerprint}) is not the committed ${name} (${committedPath}); --write-labelled-set commits it`);
}
// Per split the set has (tuning and held-out, or fresh), and per kind.
const count = (questions: readonly DescribedQuestion[], key: 'split' | 'kind') => {
  const counts = new Map<string, number>();
  for (const question of questions) counts.set(question[key], (counts.get(question[key]) ?? 0) + 1);
  return [...counts].map(([value, n]) => `${value} ${n}`).join(', ');
};
console.log(
  `${name} ${set.fingerprint}: ${set.files.length} documents indexed; ${set.answerable.length} answerable questions ` +
    `(${count(set.answerable, 'split')}; ${count(set.answerable, 'kind')}), ${set.unanswerable.length} unanswerable ` +
    `(${count(set.unanswerable, 'split')}; ${count(set.unanswerable, 'kind')}) (${set.dir})`,
);

const embedderSlug = values.embedder.replace(/[^a-zA-Z0-9]+/g, '-');
// A dataset's fit is stored with its index and used from then on: --shipped gets an index of its own, never fitted.
const dataDir = join(DESCRIBED_CACHE, `index-${sample}-${set.fingerprint}-${embedderSlug}${values.shipped ? '-shipped' : ''}`);
if (values.fresh) rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const opened = await openEvaluation(set, {
  dataDir,
  root: DESCRIBED_CACHE,
  embedder: values.embedder,
  calibrate: !values.shipped,
  log: (line) => console.log(`  ${line}`),
});
if (values.shipped) {
  // knode's calibrator looks at datasets every minute: a long first indexing may have been fitted before it was stopped.
  const view = (await opened.call('GET', `/api/v1/datasets/${opened.datasetId}`, opened.token)) as { search: { fitted: unknown } };
  if (view.search.fitted) {
    await opened.close();
    throw new Error(`--shipped: the dataset in ${dataDir} has its own fit, which its search uses; run again with --fresh`);
  }
}
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
const resultsFile = join(DESCRIBED_CACHE, `results-${sample}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(
  resultsFile,
  `${JSON.stringify({ label: values.label, date: new Date().toISOString(), sample, fingerprint: set.fingerprint, figures, answers })}\n`,
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
