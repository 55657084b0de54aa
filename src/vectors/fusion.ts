/** The constant of Cormack et al.'s reciprocal-rank fusion: damps the weight of the very first ranks. */
export const RRF_K = 60;

/**
 * Reciprocal-rank fusion: each ranked list gives an item 1 / (k + rank), rank counted from 1; an item's
 * score is the sum over the lists it appears in. Needs only ranks, so BM25 and cosine need no common scale.
 */
export function reciprocalRankFusion<T>(lists: readonly (readonly T[])[], k = RRF_K): Map<T, number> {
  const scores = new Map<T, number>();
  for (const list of lists) {
    list.forEach((item, index) => {
      scores.set(item, (scores.get(item) ?? 0) + 1 / (k + index + 1));
    });
  }
  return scores;
}
