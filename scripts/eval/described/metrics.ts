/**
 * The figures of the described set, from each question's results at threshold 0 (run.ts): a threshold
 * only cuts the list where scores fall below it, so every threshold is read from the same answers. Each
 * split the set has (tuning, held-out; the fresh sample's `fresh`) is reported apart, never pooled.
 */
import type { Mode } from '../harness.ts';
import type { DescribedQuestion, Split } from './build.ts';

export interface Result {
  readonly source: string;
  readonly score: number;
}

/** Per question, in the set's order: its results at threshold 0, best first. */
export interface Answers {
  readonly answerable: readonly (readonly Result[])[];
  readonly unanswerable: readonly (readonly Result[])[];
}

export interface AtThreshold {
  threshold: number;
  recallAt1: number;
  recallAt5: number;
  mrrAt10: number;
  /** Share of the unanswerable questions that get no document. */
  unanswerableEmpty: number;
  /** Documents an unanswerable question gets, on average. */
  unanswerableMeanDocuments: number;
}

export interface SplitFigures {
  split: Split;
  answerable: number;
  unanswerable: number;
  atZero: AtThreshold;
  atHalf: AtThreshold;
  /** Recall@5 kept (its share of the value at 0) and unanswerable emptied, for thresholds 0, 0.05... 0.95. */
  curve: { threshold: number; recallKept: number; unanswerableEmpty: number }[];
  /**
   * Expected calibration error of the scores of the first five results (10 equal bins): how far a score is
   * from the share of results with that score that are the question's document. The set labels one document
   * per question, so another document that answers it counts as wrong: the error is an upper bound.
   */
  calibrationError: number;
  /** The chance that an answerable question's best score is above an unanswerable one's (0.5: no separation). */
  rejectionAuc: number;
}

export interface DescribedFigures {
  mode: Mode;
  splits: SplitFigures[];
}

export const SPLITS: readonly Split[] = ['tuning', 'held-out', 'fresh'];
const CURVE = Array.from({ length: 20 }, (_, i) => i / 20);
const BINS = 10;

export function describedFigures(
  mode: Mode,
  set: { answerable: readonly DescribedQuestion[]; unanswerable: readonly DescribedQuestion[] },
  answers: Answers,
): DescribedFigures {
  const asked = [...set.answerable, ...set.unanswerable];
  return {
    mode,
    // The splits the set has: the described set has no fresh questions, the fresh sample nothing else.
    splits: SPLITS.filter((split) => asked.some((question) => question.split === split)).map((split) => {
      const answerable = pick(set.answerable, answers.answerable, split);
      const unanswerable = pick(set.unanswerable, answers.unanswerable, split).map(({ results }) => results);
      const atZero = at(0, answerable, unanswerable);
      return {
        split,
        answerable: answerable.length,
        unanswerable: unanswerable.length,
        atZero,
        atHalf: at(0.5, answerable, unanswerable),
        curve: CURVE.map((threshold) => {
          const figures = at(threshold, answerable, unanswerable);
          return {
            threshold,
            recallKept: round(atZero.recallAt5 > 0 ? figures.recallAt5 / atZero.recallAt5 : 0),
            unanswerableEmpty: figures.unanswerableEmpty,
          };
        }),
        calibrationError: calibrationError(answerable, unanswerable),
        rejectionAuc: rejectionAuc(answerable, unanswerable),
      };
    }),
  };
}

interface Asked {
  readonly relevant: string;
  readonly results: readonly Result[];
}

function pick(questions: readonly DescribedQuestion[], results: readonly (readonly Result[])[], split: Split): Asked[] {
  return questions.flatMap((question, index) =>
    question.split === split ? [{ relevant: question.relevant, results: results[index] ?? [] }] : [],
  );
}

function at(threshold: number, answerable: readonly Asked[], unanswerable: readonly (readonly Result[])[]): AtThreshold {
  const ranks = answerable.map(({ relevant, results }) => {
    const kept = results.filter((result) => result.score >= threshold);
    const index = kept.findIndex((result) => result.source === relevant);
    return index < 0 ? Number.POSITIVE_INFINITY : index + 1;
  });
  const returned = unanswerable.map((results) => results.filter((result) => result.score >= threshold).length);
  const share = (k: number) => ranks.filter((rank) => rank <= k).length / Math.max(1, ranks.length);
  return {
    threshold,
    recallAt1: round(share(1)),
    recallAt5: round(share(5)),
    mrrAt10: round(ranks.reduce((sum, rank) => sum + (rank <= 10 ? 1 / rank : 0), 0) / Math.max(1, ranks.length)),
    unanswerableEmpty: round(returned.filter((count) => count === 0).length / Math.max(1, returned.length)),
    unanswerableMeanDocuments: round(returned.reduce((sum, count) => sum + count, 0) / Math.max(1, returned.length), 1),
  };
}

function calibrationError(answerable: readonly Asked[], unanswerable: readonly (readonly Result[])[]): number {
  const points = [
    ...answerable.flatMap(({ relevant, results }) =>
      results.slice(0, 5).map((result) => ({ score: result.score, hit: result.source === relevant })),
    ),
    ...unanswerable.flatMap((results) => results.slice(0, 5).map((result) => ({ score: result.score, hit: false }))),
  ];
  if (points.length === 0) return 0;
  let error = 0;
  for (let bin = 0; bin < BINS; bin++) {
    const inside = points.filter((point) => Math.min(BINS - 1, Math.floor(point.score * BINS)) === bin);
    if (inside.length === 0) continue;
    const meanScore = inside.reduce((sum, point) => sum + point.score, 0) / inside.length;
    const hits = inside.filter((point) => point.hit).length / inside.length;
    error += (inside.length / points.length) * Math.abs(meanScore - hits);
  }
  return round(error);
}

function rejectionAuc(answerable: readonly Asked[], unanswerable: readonly (readonly Result[])[]): number {
  const top = (results: readonly Result[]) => results[0]?.score ?? 0;
  const positives = answerable.map(({ results }) => top(results));
  const negatives = unanswerable.map(top);
  let wins = 0;
  for (const positive of positives) for (const negative of negatives) wins += positive > negative ? 1 : positive === negative ? 0.5 : 0;
  return round(wins / Math.max(1, positives.length * negatives.length));
}

function round(value: number, digits = 3): number {
  return Number(value.toFixed(digits));
}

export function formatFigures(figures: readonly DescribedFigures[]): string {
  const header =
    '| mode | split | threshold | recall@1 | recall@5 | MRR@10 | unanswerable empty | mean documents | recall@5 kept | ECE | rejection AUC |';
  const rows = figures.flatMap(({ mode, splits }) =>
    splits.flatMap((s) =>
      [s.atZero, s.atHalf].map((f) =>
        [
          mode,
          s.split,
          f.threshold,
          f.recallAt1.toFixed(3),
          f.recallAt5.toFixed(3),
          f.mrrAt10.toFixed(3),
          f.unanswerableEmpty.toFixed(2),
          f.unanswerableMeanDocuments.toFixed(1),
          s.atZero.recallAt5 > 0 ? (f.recallAt5 / s.atZero.recallAt5).toFixed(2) : '-',
          s.calibrationError.toFixed(3),
          s.rejectionAuc.toFixed(2),
        ].join(' | '),
      ),
    ),
  );
  return [header, '|---|---|---|---|---|---|---|---|---|---|---|', ...rows.map((row) => `| ${row} |`)].join('\n');
}

/** The trade-off curve of one mode, a line per split: recall@5 kept / unanswerable empty at each threshold. */
export function formatCurve(figures: DescribedFigures): string {
  const lines = figures.splits.map(
    (s) =>
      `${figures.mode} ${s.split}: ` +
      s.curve
        .filter((_, i) => i % 2 === 0)
        .map((point) => `${point.threshold.toFixed(1)} ${point.recallKept.toFixed(2)}/${point.unanswerableEmpty.toFixed(2)}`)
        .join('  '),
  );
  return [`trade-off (threshold recall@5-kept/unanswerable-empty), ${figures.mode}:`, ...lines].join('\n');
}
