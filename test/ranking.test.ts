import { describe, expect, test } from 'bun:test';
import { LruCache } from '../src/util/lru-cache.ts';
import { type Calibration, calibrationFor, probability } from '../src/vectors/calibration.ts';
import { type Candidate, evidenceOf, rank } from '../src/vectors/ranking.ts';

const PLAIN: Calibration = {
  name: 'plain',
  keyword: { weights: { strength: 1 }, intercept: 0 },
  vector: { weights: { cosine: 10 }, intercept: -5 },
  hybrid: { weights: { strength: 1, cosine: 10 }, intercept: -5 },
};
const facts = { queryWeight: 4, chunkCount: 100 };

describe('ranking', () => {
  test('evidence is measured against the best candidate and the size of the dataset', () => {
    const candidates: Candidate[] = [
      { rowid: 1, fileKey: 'a', bm25: 8, matched: 2, cosine: 0.5 },
      { rowid: 2, fileKey: 'b', bm25: 4, matched: 6, cosine: 0.7 },
      { rowid: 3, fileKey: 'c', cosine: 0.1 },
    ];
    const [first, second, third] = evidenceOf(candidates, facts);
    const rareWord = Math.log(101);
    expect(first).toMatchObject({ bm25: 8, strength: 8 / rareWord, relative: 1, coverage: 2 });
    expect(second?.relative).toBe(0.5);
    // Where BM25 says little (FTS5's IDF in a tiny dataset), the words held speak instead.
    expect(second?.strength).toBeCloseTo(6 / rareWord, 10);
    expect(second?.cosineGap).toBeCloseTo(0, 10);
    expect(third).toMatchObject({ bm25: 0, strength: 0, coverage: 0 });
    expect(third?.cosineGap).toBeCloseTo(-0.6, 10);
    // The share of the query's word weight a chunk holds (BM25 left out), and the best share, on every candidate.
    expect([first?.held, second?.held, third?.held]).toEqual([0.5, 1, 0]);
    expect([first?.bestHeld, second?.bestHeld, third?.bestHeld]).toEqual([1, 1, 1]);
  });

  test('a question no chunk holds most of scores lower on every candidate (in-domain questions the dataset cannot answer)', () => {
    const calibration = calibrationFor('use-lite');
    const partly: Candidate[] = [{ rowid: 1, fileKey: 'a', bm25: 8, matched: 1, cosine: 0.5 }];
    const fully: Candidate[] = [{ rowid: 1, fileKey: 'a', bm25: 8, matched: 4, cosine: 0.5 }];
    for (const mode of ['keyword', 'hybrid'] as const) {
      expect(rank(partly, facts, mode, calibration, 0)[0]?.score).toBeLessThan(rank(fully, facts, mode, calibration, 0)[0]?.score ?? 0);
    }
  });

  test('scores are the mode model, best first, further chunks of a file discounted, the threshold applied', () => {
    const candidates: Candidate[] = [
      { rowid: 1, fileKey: 'a', cosine: 0.9 },
      { rowid: 2, fileKey: 'a', cosine: 0.8 },
      { rowid: 3, fileKey: 'b', cosine: 0.6 },
    ];
    const ranked = rank(candidates, facts, 'vector', PLAIN, 0);
    const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
    expect(ranked.map((entry) => entry.rowid)).toEqual([1, 3, 2]);
    expect(ranked[0]?.score).toBeCloseTo(sigmoid(4), 10);
    expect(ranked[2]?.score).toBeCloseTo(0.6 * sigmoid(3), 10);
    expect(rank(candidates, facts, 'vector', PLAIN, 0.6).map((entry) => entry.rowid)).toEqual([1, 3]);
  });

  test('in hybrid mode a chunk without a vector is scored on its keyword evidence alone', () => {
    const withoutVector: Candidate = { rowid: 7, fileKey: 'new.md', bm25: 5, matched: 3 };
    const [ranked] = rank([withoutVector], facts, 'hybrid', PLAIN, 0);
    expect(ranked?.score).toBeCloseTo(probability(PLAIN.keyword, evidenceOf([withoutVector], facts)[0]!), 10);
  });

  test('the fitted USE-lite calibration is monotone in each kind of evidence it rewards', () => {
    const calibration = calibrationFor('use-lite');
    const base = { bm25: 5, strength: 0.5, relative: 1, coverage: 0.5, held: 0.5, bestHeld: 0.5, cosine: 0.4, cosineGap: 0 };
    expect(probability(calibration.hybrid, { ...base, strength: 1.5 })).toBeGreaterThan(probability(calibration.hybrid, base));
    expect(probability(calibration.keyword, { ...base, coverage: 1 })).toBeGreaterThan(probability(calibration.keyword, base));
    expect(probability(calibration.vector, { ...base, cosine: 0.6 })).toBeGreaterThan(probability(calibration.vector, base));
    expect(probability(calibration.hybrid, { ...base, bestHeld: 0.9 })).toBeGreaterThan(probability(calibration.hybrid, base));
    expect(calibrationFor('openai:nomic-embed-text').name).toContain('not fitted');
  });
});

describe('LruCache', () => {
  test('keeps the most recently used entries', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // "a" is now the most recent
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
    expect(cache.size).toBe(2);
  });
});
