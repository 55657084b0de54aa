/**
 * Synthetic words for the search benches: a 5,000-word vocabulary of made-up syllable words, drawn with Zipf
 * frequencies (the rank-r word about 1/r as often as the first), as words are in real text, so that BM25 sees
 * common and rare words in a realistic mix. `random` is the bench's seeded generator: the same seed gives the
 * same words.
 */
const SYLLABLES = ['ka', 'to', 'ri', 'me', 'su', 'na', 'lo', 'pe', 'di', 'gu', 'ba', 'ze', 'mo', 'fi', 'ne', 'ra'];
const VOCABULARY = Array.from({ length: 5000 }, (_, i) => {
  let word = '';
  let n = i + 1;
  do {
    word += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return word;
});
const ZIPF_CDF = (() => {
  const weights = VOCABULARY.map((_, rank) => 1 / (rank + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  return weights.map((weight) => (sum += weight / total));
})();

/** A function giving the next word, drawn with `random`. */
export function zipfWords(random: () => number): () => string {
  return () => {
    const r = random();
    let low = 0;
    let high = ZIPF_CDF.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((ZIPF_CDF[middle] as number) < r) low = middle + 1;
      else high = middle;
    }
    return VOCABULARY[low] as string;
  };
}
