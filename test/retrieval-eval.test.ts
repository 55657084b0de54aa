/**
 * The small retrieval evaluation (scripts/eval, `--small`): 60 documents of this machine's documentation
 * in the five formats, ~57 known-item queries and 20 unanswerable questions, through a whole knode. A
 * ranking change that makes retrieval worse fails here; the full evaluation is `bun scripts/eval/run.ts`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EvalSet, ownedSmallSet } from '../scripts/eval/corpus.ts';
import { type Evaluation, evaluate, type Figures, MODES } from '../scripts/eval/harness.ts';

interface Floor {
  recallAt1: number;
  recallAt5: number;
  mrrAt10: number;
  /** Share of the unanswerable questions that get no document. */
  unanswerableEmpty: number;
}

// Floors measured on 2026-11-24 with ranking 2 (calibrated logistic scores over BM25 on text, title and file
// name, and cosine; src/vectors/calibration.ts) and raised with ranking 4 (2026-11-26: the query's words that no
// chunk holds count against a chunk, and whether any chunk holds most of the question, bestHeld), each a little
// below the figure measured; the comments give ranking 4's figures, with the shipped constants: raise the floors
// when ranking improves. One query is 0.018 of recall; one unanswerable question 0.05. The set (documents and
// queries) is kept in git, scripts/eval/small-set: `run.ts --write-small-set` replaces it.
const FLOORS: Record<(typeof MODES)[number], Record<'0' | '0.5', Floor>> = {
  hybrid: {
    '0': { recallAt1: 0.9, recallAt5: 0.96, mrrAt10: 0.93, unanswerableEmpty: 0 }, // 0.930 1.000 0.959
    // 0.85 of the unanswerable questions empty, against 0.45 with ranking 3; recall@1 at 0.5 0.912 then.
    '0.5': { recallAt1: 0.85, recallAt5: 0.92, mrrAt10: 0.88, unanswerableEmpty: 0.8 }, // 0.877 0.947 0.906, 0.85
  },
  keyword: {
    '0': { recallAt1: 0.9, recallAt5: 0.96, mrrAt10: 0.93, unanswerableEmpty: 0 }, // 0.912 1.000 0.944
    '0.5': { recallAt1: 0.84, recallAt5: 0.92, mrrAt10: 0.87, unanswerableEmpty: 0.85 }, // 0.860 0.947 0.891, 0.90
  },
  vector: {
    '0': { recallAt1: 0.31, recallAt5: 0.57, mrrAt10: 0.42, unanswerableEmpty: 0 }, // 0.368 0.632 0.483
    // USE-lite alone is rarely sure: at 0.5 vector mode returns almost nothing, to questions of every kind.
    '0.5': { recallAt1: 0, recallAt5: 0, mrrAt10: 0, unanswerableEmpty: 0.95 }, // 0.000 0.000 0.000, 1.00
  },
};

describe('retrieval evaluation (small set)', () => {
  let root: string;
  let set: EvalSet;
  let evaluation: Evaluation;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'knode-eval-'));
    set = ownedSmallSet();
    const dataDir = join(root, 'data');
    mkdirSync(dataDir);
    // The ingestion root is the owned corpus itself; the temporary folder holds only knode's data.
    evaluation = await evaluate(set, { dataDir, root: set.dir });
  }, 180_000);

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  test('the set has all five formats, ~60 known-item queries and 20 unanswerable questions, all indexed', () => {
    expect(new Set(set.files.map((file) => file.format))).toEqual(new Set(['pdf', 'txt', 'md', 'docx', 'html']));
    expect(set.queries.length).toBeGreaterThanOrEqual(50);
    expect(set.unanswerable.length).toBe(20);
    expect(evaluation.failedFiles).toEqual([]);
    const paths = new Set(set.files.map((file) => file.path));
    for (const query of set.queries) expect(paths.has(query.relevant)).toBe(true);
  });

  for (const mode of MODES) {
    for (const threshold of ['0', '0.5'] as const) {
      test(`${mode} at threshold ${threshold} stays above its floors`, () => {
        const figures = evaluation.figures.find((f) => f.mode === mode && f.threshold === Number(threshold)) as Figures;
        const floor = FLOORS[mode][threshold];
        const measured = {
          recallAt1: figures.recallAt1,
          recallAt5: figures.recallAt5,
          mrrAt10: figures.mrrAt10,
          unanswerableEmpty: figures.unanswerableEmpty,
        };
        // One object, so a failure shows every figure against every floor.
        const below = Object.entries(floor).filter(([name, value]) => measured[name as keyof Floor] < value);
        expect({ below, measured }).toEqual({ below: [], measured });
      });
    }
  }
});
