/**
 * Tunes the knobs of a dataset's own calibration (src/vectors/self-calibration.ts, FitOptions) on the
 * described set's **tuning** half, straight on its index (run `run.ts` first): for each variant, fits the
 * dataset's calibration from its pseudo-questions as knode does, then prints recall@5 kept at 0.5 and the
 * unanswerable questions emptied, per mode, for the tuning half (and the held-out half, to report, not to choose).
 *
 * Usage: bun scripts/eval/described/tune-fit.ts ['[{"foreignWords":0}, ...]'] [--calibration constants.json]
 *   the variants of FitOptions to try (JSON); --calibration: shipped constants to start from (fit.ts --out)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type Calibration, calibrationFor } from '../../../src/vectors/calibration.ts';
import type { SearchMode } from '../../../src/vectors/ranking.ts';
import { type FitOptions, fitDatasetCalibration } from '../../../src/vectors/self-calibration.ts';
import { openIndexedSet, rejectionFigures } from './indexed-set.ts';

const { values, positionals } = parseArgs({ options: { calibration: { type: 'string', default: '' } }, allowPositionals: true });
const MODES: SearchMode[] = ['hybrid', 'keyword', 'vector'];
const { store, datasetId, embedder, questions, observed, close } = await openIndexedSet(MODES);

function figures(calibration: Calibration, mode: SearchMode, split: string) {
  const rows = observed.get(mode) ?? [];
  const at = (threshold: number) => rejectionFigures(questions, rows, mode, calibration, split, threshold);
  const zero = at(0);
  const half = at(0.5);
  return `${mode} R@5 ${zero.recall.toFixed(3)} kept ${(half.recall / zero.recall).toFixed(2)} empty ${half.empty.toFixed(2)}`;
}

const shipped: Calibration = values.calibration
  ? (JSON.parse(readFileSync(values.calibration, 'utf8')) as Calibration)
  : calibrationFor('use-lite');
console.log('shipped:');
for (const split of ['tuning', 'held-out']) console.log(`  ${split}: ${MODES.map((mode) => figures(shipped, mode, split)).join(' | ')}`);
const variants: Partial<FitOptions>[] = JSON.parse(
  positionals[0] ??
    JSON.stringify([
      { foreignWords: 0, floorAtEven: [] },
      { foreignWords: 0, recallKept: 0.99, floorAtEven: [] },
      { floorAtEven: [] },
      { foreignWords: 2 },
      {},
    ]),
);
for (const options of variants) {
  const fitted = await fitDatasetCalibration({
    datasetId,
    embedder: 'use-lite',
    shipped,
    source: store,
    embed: (texts) => embedder.embed(texts),
    now: new Date().toISOString(),
    options,
  });
  if (!fitted) continue;
  console.log(`${JSON.stringify(options)}:`);
  for (const split of ['tuning', 'held-out']) {
    console.log(`  ${split}: ${MODES.map((mode) => figures(fitted.calibration, mode, split)).join(' | ')}`);
  }
}
await close();
