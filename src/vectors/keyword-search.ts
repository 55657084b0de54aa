import type { Database as SqliteDatabase } from 'bun:sqlite';
import { keywordTerms, matchExpression } from './keyword-query.ts';
import { type DatasetTables, TOKENIZER } from './tables.ts';

/** Below this many chunks every query word is searched: reading all their postings is cheap. */
const PRUNE_MIN_CHUNKS = 10_000;
/**
 * Above it, query words are added rarest first while their chunk counts sum to at most this. FTS5
 * computes BM25 for every chunk that matches any word (~0.3 µs each), so a common word makes a query
 * slow (75 ms at 100k chunks, measured) while adding little to the ranking: its IDF is small, and 0 for
 * a word in more than half of the chunks.
 */
const POSTING_BUDGET = 20_000;

// A per-connection scratch table with the datasets' tokenizer: inserting the query words and reading
// its vocabulary gives their stems, which is what the datasets' fts5vocab tables count.
const QUERY_WORDS = 'knode_query_words';
const QUERY_WORD_TERMS = 'knode_query_word_terms';

/** Rowids of the dataset's chunks matching `text`, best BM25 first, at most `wanted`. */
export function keywordChunks(sqlite: SqliteDatabase, tables: DatasetTables, chunkCount: number, text: string, wanted: number): number[] {
  let words = keywordTerms(text);
  if (chunkCount >= PRUNE_MIN_CHUNKS && words.length > 0) words = affordableWords(sqlite, tables, chunkCount, words);
  const expression = matchExpression(words);
  if (!expression) return [];
  const rows = sqlite
    .query(`SELECT rowid FROM ${tables.keywords} WHERE ${tables.keywords} MATCH ? ORDER BY rank LIMIT ?`)
    .all(expression, wanted) as { rowid: number }[];
  return rows.map((row) => row.rowid);
}

function affordableWords(sqlite: SqliteDatabase, tables: DatasetTables, chunkCount: number, words: string[]): string[] {
  const stems = stemsOf(sqlite, words);
  const documentsWith = sqlite.query(`SELECT doc FROM ${tables.vocabulary} WHERE term = ?`);
  const counted = words
    .map((word, index) => {
      const wordStems = stems.get(index + 1) ?? [];
      const chunks = Math.max(0, ...wordStems.map((stem) => (documentsWith.get(stem) as { doc: number } | null)?.doc ?? 0));
      return { word, chunks, searchable: wordStems.length > 0 };
    })
    .filter((entry) => entry.searchable && entry.chunks > 0 && entry.chunks <= chunkCount / 2)
    .sort((a, b) => a.chunks - b.chunks);
  const kept: string[] = [];
  let postings = 0;
  for (const entry of counted) {
    if (kept.length > 0 && postings + entry.chunks > POSTING_BUDGET) break;
    kept.push(entry.word);
    postings += entry.chunks;
  }
  return kept;
}

/** Stems of each word (keyed by 1-based position), as the datasets' tokenizer makes them. */
function stemsOf(sqlite: SqliteDatabase, words: readonly string[]): Map<number, string[]> {
  sqlite.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${QUERY_WORDS} USING fts5(word, tokenize='${TOKENIZER}')`);
  sqlite.run(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${QUERY_WORD_TERMS} USING fts5vocab(temp, ${QUERY_WORDS}, 'instance')`);
  sqlite.run(`DELETE FROM temp.${QUERY_WORDS}`);
  const insert = sqlite.query(`INSERT INTO temp.${QUERY_WORDS} (rowid, word) VALUES (?, ?)`);
  for (const [index, word] of words.entries()) insert.run(index + 1, word);
  const rows = sqlite.query(`SELECT term, doc FROM temp.${QUERY_WORD_TERMS}`).all() as { term: string; doc: number }[];
  sqlite.run(`DELETE FROM temp.${QUERY_WORDS}`);
  const stems = new Map<number, string[]>();
  for (const { term, doc } of rows) stems.set(doc, [...(stems.get(doc) ?? []), term]);
  return stems;
}
