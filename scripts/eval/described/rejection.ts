import { parseArgs } from 'node:util';
import { calibrationFor, type LogisticModel } from '../../../src/vectors/calibration.ts';
import { openIndexedSet, rejectionFigures } from './indexed-set.ts';

const { values } = parseArgs({ options: { weights: { type: 'string', default: '0,8,16,24,32' } } });
type Mode = 'hybrid' | 'keyword';
const { questions, observed, close } = await openIndexedSet<Mode>(['hybrid', 'keyword']);
await close();

/** Recall@5 and unanswerable questions emptied at `threshold`, with `model` as the mode's model. */
function figures(mode: Mode, model: LogisticModel, split: string, threshold: number) {
  const calibration = { ...calibrationFor('use-lite'), [mode]: model };
  return rejectionFigures(questions, observed.get(mode) ?? [], mode, calibration, split, threshold);
}

/** The intercept (bisected) at which 0.5 keeps 95% of recall@5 on the tuning half. */
function placed(mode: Mode, model: LogisticModel): LogisticModel {
  const full = figures(mode, model, 'tuning', 0).recall;
  let low = -60;
  let high = 60;
  for (let step = 0; step < 30; step++) {
    const middle = (low + high) / 2;
    if (figures(mode, { ...model, intercept: model.intercept - middle }, 'tuning', 0.5).recall >= 0.95 * full) low = middle;
    else high = middle;
  }
  return { ...model, intercept: Math.round((model.intercept - low) * 1000) / 1000 };
}

for (const mode of ['hybrid', 'keyword'] as const) {
  // fit.ts's weights for the mode; the intercept is placed again, so its value here does not matter.
  const { bestHeld: _, ...weights } = calibrationFor('use-lite')[mode].weights;
  for (const weight of values.weights.split(',').map(Number)) {
    const model = placed(mode, { weights: { ...weights, bestHeld: weight }, intercept: 0 });
    const line = ['tuning', 'held-out'].map((split) => {
      const zero = figures(mode, model, split, 0);
      const half = figures(mode, model, split, 0.5);
      return `${split} kept ${(half.recall / zero.recall).toFixed(2)} emptied ${half.empty.toFixed(2)}`;
    });
    console.log(`${mode.padEnd(7)} bestHeld ${String(weight).padStart(2)}: ${line.join(' | ')}  (intercept ${model.intercept})`);
  }
}
