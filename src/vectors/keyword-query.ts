// Each term becomes one quoted FTS5 string, so nothing the user types (quotes, NEAR, AND, *, ^, :,
// parentheses, column filters) is read as query syntax. Term characters are those the unicode61
// tokenizer keeps (letters, numbers, marks, private use); everything else separates terms.
const TERM = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
const MAX_TERMS = 32;

/**
 * Words that say how a question is asked, not what it is about. With OR semantics every query word
 * finds chunks, and BM25 ranks a chunk full of "how", "do", "the" above one that holds the single rare
 * word the question is about; dropping these lifted recall@1 of keyword search from 0.88 to 0.92 on the
 * evaluation set (scripts/eval). Kept when a query has nothing else.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a about above after again all also am an and any are as at be because been before being below between both but by can ' +
    'could did do does doing done during each either else ever few for from further get gets getting got had has have having ' +
    'he her here hers him his how i if in into is it its itself just let me more most my myself no nor of off on once only ' +
    'or other our ours out over own please same she should so some such than that the their theirs them then there these ' +
    'they this those through to too under until up upon very via was we were what whatever when where whether which while ' +
    'who whom whose why will with within without would yes yet you your yours hi hello hey thanks thank tell explain'
  ).split(' '),
);

/** The distinct lower-cased words of `text` that carry its topic, at most 32 (a longer query adds cost, not precision). */
export function keywordTerms(text: string): string[] {
  const all = new Set<string>();
  for (const match of text.toLowerCase().matchAll(TERM)) all.add(match[0]);
  const topical = [...all].filter((term) => !STOPWORDS.has(term));
  return (topical.length > 0 ? topical : [...all]).slice(0, MAX_TERMS);
}

/**
 * An FTS5 MATCH expression finding chunks that contain any of `terms` (BM25 ranks those with more,
 * and rarer, terms first); undefined when there is nothing to search for.
 */
export function matchExpression(terms: readonly string[]): string | undefined {
  if (terms.length === 0) return undefined;
  return terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' OR ');
}
