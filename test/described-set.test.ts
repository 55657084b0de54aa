/**
 * The described evaluation set (scripts/eval/described): its man page reader, and the figures it reports
 * from each question's results at threshold 0 (every threshold, the trade-off curve, the calibration error).
 * The set itself is built from this machine's documentation by `bun scripts/eval/described/run.ts`.
 */
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DescribedQuestion } from '../scripts/eval/described/build.ts';
import { describedFigures } from '../scripts/eval/described/metrics.ts';
import { parseMan } from '../scripts/eval/described/sources.ts';

const question = (relevant: string, split: DescribedQuestion['split']): DescribedQuestion => ({
  question: relevant,
  kind: 'man',
  split,
  relevant,
  origin: '',
});

describe('described set', () => {
  test("a man page's NAME line is the question and the rest of the page the document", () => {
    const page = parseMan(
      [
        '.\\" a comment',
        '.TH LS 1',
        '.SH NAME',
        'ls \\- list directory contents',
        '.SH DESCRIPTION',
        'List information about the \\fIFILE\\fRs (the current directory by default).',
        '.TP',
        '.BR \\-a ", " \\-\\-all',
        'do not ignore entries starting with .',
      ].join('\n'),
    );
    expect(page?.description).toBe('list directory contents');
    expect(page?.sections.map((section) => section.heading)).toEqual(['Description']);
    const text = page?.sections.flatMap((section) => section.paragraphs).join(' ') ?? '';
    expect(text).toContain('List information about the FILEs');
    expect(text).toContain('-a , --all');
    expect(text).not.toContain('list directory contents');
    expect(parseMan('.so man1/other.1')).toBeUndefined();
  });

  test('figures at every threshold are read from the answers at 0, each split apart', () => {
    const set = {
      answerable: [question('a', 'tuning'), question('b', 'tuning'), question('c', 'held-out')],
      unanswerable: [question('x', 'tuning'), question('y', 'held-out')],
    };
    const figures = describedFigures('hybrid', set, {
      answerable: [
        [{ source: 'a', score: 0.9 }],
        [
          { source: 'z', score: 0.6 },
          { source: 'b', score: 0.4 },
        ],
        [{ source: 'c', score: 0.7 }],
      ],
      unanswerable: [[{ source: 'a', score: 0.3 }], [{ source: 'c', score: 0.8 }]],
    });
    const tuning = figures.splits.find((split) => split.split === 'tuning');
    expect(tuning?.atZero).toMatchObject({ recallAt1: 0.5, recallAt5: 1, mrrAt10: 0.75, unanswerableEmpty: 0 });
    // At 0.5, b's document (0.4) and the unanswerable question's only result (0.3) are dropped.
    expect(tuning?.atHalf).toMatchObject({ recallAt1: 0.5, recallAt5: 0.5, unanswerableEmpty: 1 });
    expect(tuning?.curve.find((point) => point.threshold === 0.5)).toEqual({ threshold: 0.5, recallKept: 0.5, unanswerableEmpty: 1 });
    // Both answerable questions' best scores (0.9, 0.6) are above the unanswerable one's (0.3).
    expect(tuning?.rejectionAuc).toBe(1);
    // Bins: 0.9 right (error 0.1), 0.6 wrong (0.6), 0.4 right (0.6), 0.3 wrong (0.3), a quarter each.
    expect(tuning?.calibrationError).toBeCloseTo((0.1 + 0.6 + 0.6 + 0.3) / 4, 3);
    const heldOut = figures.splits.find((split) => split.split === 'held-out');
    expect(heldOut?.atHalf).toMatchObject({ recallAt1: 1, unanswerableEmpty: 0 });
    expect(heldOut?.rejectionAuc).toBe(0);
  });

  test('the committed set keeps the tuning and held-out questions apart, with unanswerable questions in both', () => {
    const committed = JSON.parse(readFileSync(join(import.meta.dir, '../scripts/eval/described/labelled-set.json'), 'utf8')) as {
      documents: { path: string }[];
      answerable: DescribedQuestion[];
      unanswerable: DescribedQuestion[];
    };
    const indexed = new Set(committed.documents.map((document) => document.path));
    for (const q of committed.answerable) expect(indexed.has(q.relevant)).toBe(true);
    for (const q of committed.unanswerable) expect(indexed.has(q.relevant)).toBe(false);
    for (const questions of [committed.answerable, committed.unanswerable]) {
      const tuning = questions.filter((q) => q.split === 'tuning').length;
      expect(Math.abs(tuning - (questions.length - tuning))).toBeLessThanOrEqual(questions.length * 0.05 + 2);
    }
    expect(committed.answerable.length).toBeGreaterThanOrEqual(250);
    expect(committed.unanswerable.length).toBeGreaterThanOrEqual(80);
  });
});
