import { STOPWORDS } from '../vectors/keyword-query.ts';

/**
 * What the word cloud keeps of a question: its topical words, never the question. Letters, numbers and marks
 * make a word (as the keyword search reads them: vectors/keyword-query.ts), compared in Unicode's compatibility
 * form and lower case, so "Café", "CAFÉ" and "ｃａｆé" are one term; the stop words of the keyword search are
 * left out, and so are single characters and words longer than any real one (hashes, keys, base64).
 */

const WORD = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
/** Only the start of a long message is read: the question is there, and a megabyte pasted in costs no more. */
const MAX_QUESTION_CHARACTERS = 2_000;
/** Words kept per question: a question about more is a document, and one query may not flood the cloud. */
export const MAX_TERMS_PER_QUESTION = 24;
const MIN_TERM_LENGTH = 2;
const MAX_TERM_LENGTH = 32;

/** The distinct topical words of `question`, in the order they first appear. */
export function questionTerms(question: string): string[] {
  const text = question.slice(0, MAX_QUESTION_CHARACTERS).normalize('NFKC').toLowerCase();
  const terms = new Set<string>();
  for (const match of text.matchAll(WORD)) {
    const term = match[0];
    if (term.length < MIN_TERM_LENGTH || term.length > MAX_TERM_LENGTH || STOPWORDS.has(term)) continue;
    terms.add(term);
    if (terms.size === MAX_TERMS_PER_QUESTION) break;
  }
  return [...terms];
}

/** The hour `at` falls in, as query_terms keeps it (`2026-11-26T11:00:00.000Z`): the exact time is not kept. */
export function hourOf(at: Date): string {
  return new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000).toISOString();
}
