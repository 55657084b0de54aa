/**
 * The retrieval evaluation: builds the labelled set (corpus.ts), indexes it in a whole knode and prints
 * recall@1, recall@5 and MRR@10 of every search mode at thresholds 0 and 0.5, with what unanswerable
 * questions get back. Run it before and after every ranking change; the README keeps the table.
 *
 * Usage: bun scripts/eval/run.ts [--small] [--fresh] [--embedder use-lite] [--modes hybrid,keyword,vector]
 *                                [--use-lite onnx|onnx-int8|tfjs] [--write-labelled-set] [--write-small-set]
 *   --small               the ~60-query set of test/retrieval-eval.test.ts, as kept in git (scripts/eval/small-set)
 *   --fresh               index again even when an index of this corpus and embedder is cached
 *   --use-lite            the engine of the use-lite embedder (default: knode's, onnx falling back to tfjs);
 *                         an index made with another engine is kept apart
 *   --write-labelled-set  store the full set's queries as scripts/eval/labelled-set.json (kept in git)
 *   --shipped             keep the shipped calibration (by default the dataset's own is fitted first, as knode does)
 *   --write-small-set     build the small set afresh from this machine's documentation and keep it in git
 *                         (then measure the test's floors again)
 *
 * The corpus, the index (one per corpus fingerprint and embedder, reused between runs: indexing 400
 * documents with USE-lite takes minutes) and results-*.json go to scripts/eval/.cache/ (not in git).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setUseLiteDefaults } from '../../src/embeddings/use-lite.ts';
import { buildEvalSet, DEFAULT_CACHE, labelledSet, ownedSmallSet, readLabelledSet, removeStale, writeOwnedSmallSet } from './corpus.ts';
import { evaluate, formatTable, MODES, type Mode } from './harness.ts';

const COMMITTED_SET = join(import.meta.dir, 'labelled-set.json');

const { values } = parseArgs({
  options: {
    small: { type: 'boolean', default: false },
    fresh: { type: 'boolean', default: false },
    embedder: { type: 'string', default: 'use-lite' },
    modes: { type: 'string', default: MODES.join(',') },
    'use-lite': { type: 'string' },
    'write-labelled-set': { type: 'boolean', default: false },
    'write-small-set': { type: 'boolean', default: false },
    shipped: { type: 'boolean', default: false },
  },
});
const size = values.small ? 'small' : 'full';
const embedder = values.embedder;
const modes = values.modes.split(',') as Mode[];
if (modes.some((mode) => !MODES.includes(mode))) throw new Error(`--modes takes ${MODES.join(', ')}`);

mkdirSync(DEFAULT_CACHE, { recursive: true });
if (values['write-small-set']) writeOwnedSmallSet(await buildEvalSet('small', DEFAULT_CACHE));
const set = size === 'small' ? ownedSmallSet() : await buildEvalSet(size, DEFAULT_CACHE);
if (size === 'full') {
  const committed = readLabelledSet(COMMITTED_SET);
  if (values['write-labelled-set']) {
    writeFileSync(COMMITTED_SET, `${JSON.stringify(labelledSet(set), null, 2)}\n`);
    console.log(`wrote ${COMMITTED_SET}`);
  } else if (committed && committed.fingerprint !== set.fingerprint) {
    console.warn(
      `warning: this machine's set (${set.fingerprint}) differs from scripts/eval/labelled-set.json (${committed.fingerprint}): ` +
        'other documentation is installed, so the figures are not comparable with the README table',
    );
  }
}

const formats = count(set.files.map((file) => file.format));
const kinds = count(set.files.map((file) => file.kind));
const words = set.files.reduce((sum, file) => sum + file.words, 0);
console.log(`set ${set.fingerprint}, corpus ${set.corpusFingerprint}: ${set.files.length} documents, ${words} words (${set.dir})`);
console.log(`  formats ${JSON.stringify(formats)}, sources ${JSON.stringify(kinds)}`);
const technical = set.unanswerable.filter((q) => q.technical).length;
console.log(
  `  ${set.queries.length} known-item queries ${JSON.stringify(count(set.queries.map((q) => q.style)))}, ` +
    `${set.unanswerable.length} unanswerable (${technical} technical)`,
);

const engine = values['use-lite'];
if (engine !== undefined) {
  if (!['onnx', 'onnx-int8', 'tfjs'].includes(engine)) throw new Error('--use-lite takes onnx, onnx-int8 or tfjs');
  setUseLiteDefaults({ engine: engine === 'tfjs' ? 'tfjs' : 'onnx', quantized: engine === 'onnx-int8' });
}
const embedderSlug = `${embedder}${engine ? `-${engine}` : ''}`.replace(/[^a-zA-Z0-9]+/g, '-');
const dataDir = join(DEFAULT_CACHE, `index-${size}-${set.corpusFingerprint}-${embedderSlug}`);
if (values.fresh) rmSync(dataDir, { recursive: true, force: true });
removeStale(DEFAULT_CACHE, `index-${size}-`, dataDir);
mkdirSync(dataDir, { recursive: true });

const evaluation = await evaluate(set, {
  dataDir,
  // The owned small set lies in scripts/eval/small-set, outside the cache.
  root: size === 'small' ? set.dir : DEFAULT_CACHE,
  calibrate: !values.shipped,
  embedder,
  modes,
  log: (line) => console.log(`  ${line}`),
});

console.log(
  `\nindexed ${evaluation.files} files into ${evaluation.chunks} chunks in ${evaluation.indexingSeconds.toFixed(0)} s` +
    `${evaluation.reusedIndex ? ' (when first indexed; reused now)' : ''}, embedder ${embedder}; failed: ${evaluation.failedFiles.length}`,
);
for (const failed of evaluation.failedFiles) console.log(`  failed ${failed.path}: ${failed.error}`);
console.log(`\n${formatTable(evaluation)}\n`);
for (const f of evaluation.figures.filter((figure) => figure.threshold === 0)) {
  console.log(
    `${f.mode}: recall@5 by style ${JSON.stringify(f.recallAt5ByStyle)}, by format ${JSON.stringify(f.recallAt5ByFormat)}, ${f.meanQueryMs} ms a query`,
  );
}
const resultsFile = join(DEFAULT_CACHE, `results-${size}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
// The figures with every query's outcome, to compare two runs query by query.
const details = { queries: set.queries, unanswerable: set.unanswerable };
writeFileSync(resultsFile, `${JSON.stringify({ size, date: new Date().toISOString(), ...evaluation, ...details })}\n`);
console.log(`\nfigures written to ${resultsFile}`);

function count(items: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of [...items].sort()) counts[item] = (counts[item] ?? 0) + 1;
  return counts;
}
