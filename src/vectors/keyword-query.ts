// Each term becomes one quoted FTS5 string, so nothing the user types (quotes, NEAR, AND, *, ^, :,
// parentheses, column filters) is read as query syntax. Term characters are those the unicode61
// tokenizer keeps (letters, numbers, marks, private use); everything else separates terms.
const TERM = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
const MAX_TERMS = 32;

/** The distinct lower-cased words of `text`, at most 32 (a longer query adds cost, not precision). */
export function keywordTerms(text: string): string[] {
  const terms = new Set<string>();
  for (const match of text.toLowerCase().matchAll(TERM)) {
    terms.add(match[0]);
    if (terms.size >= MAX_TERMS) break;
  }
  return [...terms];
}

/**
 * An FTS5 MATCH expression finding chunks that contain any of `terms` (BM25 ranks those with more,
 * and rarer, terms first); undefined when there is nothing to search for.
 */
export function matchExpression(terms: readonly string[]): string | undefined {
  if (terms.length === 0) return undefined;
  return terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' OR ');
}
