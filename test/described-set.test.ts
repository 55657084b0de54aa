/**
 * The described evaluation set (scripts/eval/described): its man page reader, the figures it reports
 * from each question's results at threshold 0 (every threshold, the trade-off curve, the calibration error),
 * and its selection: pinned to the committed file, drawn again only on purpose.
 * The set itself is built from this machine's documentation by `bun scripts/eval/described/run.ts`.
 */
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDescribedSet, type DescribedQuestion, describedLabelledSet } from '../scripts/eval/described/build.ts';
import { describedFigures } from '../scripts/eval/described/metrics.ts';
import { PinnedSetError } from '../scripts/eval/described/selection.ts';
import { type DescribedDocument, parseMan } from '../scripts/eval/described/sources.ts';

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

describe('described set selection', () => {
  const root = mkdtempSync(join(tmpdir(), 'knode-described-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const cacheRoot = join(root, 'cache');
  const committedPath = join(root, 'labelled-set.json');
  const document = (
    kind: DescribedDocument['kind'],
    name: string,
    text = `The ${name} text, long enough to index.`,
  ): DescribedDocument => ({
    id: `${kind}-${name}`,
    kind,
    origin: `/usr/share/${kind}/${name}`,
    title: name,
    sections: [{ heading: 'Description', paragraphs: [text] }],
    description: `what ${name} does for its users`,
  });
  // Man pages of distinct families (at most 3 of one are drawn), info nodes and READMEs: a few of each kind.
  const machine = [
    ...['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'].map((name) => document('man', name)),
    ...['india', 'juliet', 'kilo', 'lima'].map((name) => document('info', name)),
    ...['mike', 'november', 'oscar', 'papa'].map((name) => document('debian', name)),
  ];
  const commit = async () => {
    rmSync(committedPath, { force: true });
    // Nothing committed yet: the seeded draw, as --redraw --write-labelled-set makes it.
    const drawn = await buildDescribedSet('described', { cacheRoot, committedPath, documents: machine });
    expect(drawn.selection.drawn).toBe(true);
    writeFileSync(committedPath, JSON.stringify(describedLabelledSet(drawn)));
    return drawn;
  };

  test('a committed selection is rebuilt as committed, whatever else the machine has; --redraw draws again', async () => {
    const drawn = await commit();
    expect(drawn.unanswerable.length).toBeGreaterThan(0);
    // A package installed since: one more man page, which shifts the seeded draw.
    const installed = [...machine, document('man', 'quebec')].reverse();
    const pinned = await buildDescribedSet('described', { cacheRoot, committedPath, documents: installed });
    expect(pinned.fingerprint).toBe(drawn.fingerprint);
    expect(pinned.files).toEqual(drawn.files);
    expect(pinned.answerable).toEqual(drawn.answerable);
    expect(pinned.unanswerable).toEqual(drawn.unanswerable);
    expect(pinned.selection).toEqual({
      drawn: false,
      committedFingerprint: drawn.fingerprint,
      missing: [],
      leftOut: { questions: 0, documents: 0 },
      changedTexts: [],
      overlapping: 0,
    });
    const redrawn = await buildDescribedSet('described', { cacheRoot, committedPath, documents: installed, redraw: true });
    expect(redrawn.selection.drawn).toBe(true);
    expect(redrawn.fingerprint).not.toBe(drawn.fingerprint);
    const origins = [...redrawn.answerable, ...redrawn.unanswerable].map((question) => question.origin);
    expect(origins).toContain('/usr/share/man/quebec');
  });

  test('a committed document that is gone or described otherwise is reported by name and stops the run unless allowed', async () => {
    const drawn = await commit();
    const gone = drawn.answerable[0] as DescribedQuestion;
    const redescribed = drawn.unanswerable[0] as DescribedQuestion;
    const changed = machine
      .filter((candidate) => candidate.origin !== gone.origin)
      .map((candidate) =>
        candidate.origin === redescribed.origin ? { ...candidate, description: 'something else entirely now' } : candidate,
      );
    const build = (allowMissing: boolean) => buildDescribedSet('described', { cacheRoot, committedPath, documents: changed, allowMissing });
    const error = await build(false).then(
      () => undefined,
      (thrown: Error) => thrown,
    );
    expect(error?.message).toContain(`${gone.relevant}: ${gone.origin} is not on this machine`);
    expect(error?.message).toContain(`${redescribed.relevant}: ${redescribed.origin} is now described "something else entirely now"`);
    expect(error?.message).toContain('--allow-missing');
    // run.ts prints it alone and stops.
    expect(error).toBeInstanceOf(PinnedSetError);
    const allowed = await build(true);
    expect(allowed.answerable).toEqual(drawn.answerable.slice(1));
    expect(allowed.unanswerable).toEqual(drawn.unanswerable.slice(1));
    expect(allowed.files.map((file) => file.origin)).not.toContain(gone.origin);
    expect(allowed.selection).toMatchObject({ drawn: false, leftOut: { questions: 2, documents: 1 }, changedTexts: [] });
    expect(allowed.selection.drawn ? [] : allowed.selection.missing).toHaveLength(2);
  });

  test('a committed document whose text changed is used, and named as changed (the fingerprint covers the text)', async () => {
    const drawn = await commit();
    const edited = drawn.answerable[1] as DescribedQuestion;
    const changed = machine.map((candidate) =>
      candidate.origin === edited.origin ? document(candidate.kind, candidate.title, 'A newer release reworded this text.') : candidate,
    );
    const pinned = await buildDescribedSet('described', { cacheRoot, committedPath, documents: changed });
    expect(pinned.answerable).toEqual(drawn.answerable);
    expect(pinned.fingerprint).not.toBe(drawn.fingerprint);
    expect(pinned.selection).toMatchObject({ drawn: false, missing: [], changedTexts: [edited.origin] });
  });
});
