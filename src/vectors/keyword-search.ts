import type { Database as SqliteDatabase } from 'bun:sqlite';
import { keywordTerms, matchExpression } from './keyword-query.ts';
import { type DatasetTables, outsideRanges, type RowRange, TOKENIZER } from './tables.ts';

/** Below this many chunks every query word is searched: reading all their postings is cheap. */
export const PRUNE_MIN_CHUNKS = 10_000;
/**
 * Above it, query words are added rarest first while their chunk counts sum to at most this. FTS5
 * computes BM25 for every chunk that matches any word (~0.3 µs each), so a common word makes a query
 * slow (75 ms at 100k chunks, measured) while adding little to the ranking: its IDF is small, and 0 for
 * a word in more than half of the chunks.
 */
const POSTING_BUDGET = 20_000;

/**
 * BM25 weights of the keyword table's columns (tables.ts): the chunk's text, the document's title, the
 * words of its file name (layout 2), the document's lead (layout 3). A match in the title or the name says
 * the whole document is about the word; weights 1/2/2 lifted recall@1 of keyword search by about 0.02 on
 * the evaluation set. The lead's weight: see LEAD_WEIGHT.
 */
export const COLUMN_WEIGHTS = [1, 2, 2] as const;
/**
 * The lead's weight. On the described set's tuning half (scripts/eval/described, issue 23), MRR@10 of
 * keyword search was 0.737 without a lead, 0.744 / 0.753 / 0.755 / 0.776 / 0.775 / 0.779 at weights
 * 0.5 / 1 / 2 / 4 / 6 / 10, hybrid's 0.767 then 0.766 / 0.771 / 0.780 / 0.780 / 0.782 / 0.779: 4 is where it
 * levels off, and the scores' calibration error grows with the weight (0.41 at 0, 0.46 at 4, 0.51 at 10).
 */
export const LEAD_WEIGHT = 4;

// A per-connection scratch table with the datasets' tokenizer: inserting the query words and reading
// its vocabulary gives their stems, which is what the datasets' fts5vocab tables count.
const QUERY_WORDS = 'knode_query_words';
const QUERY_WORD_TERMS = 'knode_query_word_terms';

/** A searched word and how much it says: ln(1 + N / chunks holding it), positive even in a tiny dataset. */
export interface WeightedWord {
  readonly word: string;
  readonly weight: number;
  /** No chunk holds it: it counts in the query's weight and is never searched. */
  readonly unheld?: true;
}

/** A query as the keyword index sees it. */
export interface KeywordQuery {
  readonly expression: string;
  /** The searched words, then the query's words that no chunk holds (their weight counts; they match nothing). */
  readonly words: readonly WeightedWord[];
}

/**
 * The keyword side of a query, or undefined when it has no word any chunk holds. Each word is weighted
 * by a smoothed inverse document frequency: FTS5's own is 0 for a word in half of the chunks, so in a
 * dataset of two files BM25 says nothing, while the evidence must still tell a match from none (ranking.ts).
 */
export function keywordQuery(sqlite: SqliteDatabase, tables: DatasetTables, chunkCount: number, text: string): KeywordQuery | undefined {
  const words = keywordTerms(text);
  if (words.length === 0) return undefined;
  const counted = countWords(sqlite, tables, words);
  const searched = chunkCount >= PRUNE_MIN_CHUNKS ? affordable(counted, chunkCount) : counted;
  const expression = matchExpression(searched.map((entry) => entry.word));
  if (!expression) return undefined;
  const weighted = searched.map((entry) => ({ word: entry.word, weight: Math.log(1 + chunkCount / entry.chunks) }));
  return { expression, words: withUnheldWords(weighted, words, counted) };
}

/**
 * The searched words, then the query's words that no chunk holds. Such a word still counts in what the
 * question asks for (a chunk holding all its other words does not hold the whole question: issue 23, a
 * question the dataset cannot answer often shares only some of its words with it), as much as the searched
 * words on average; it is never searched. Both stores weigh a query so (the PostgreSQL one too).
 */
export function withUnheldWords(
  searched: readonly WeightedWord[],
  words: readonly string[],
  counted: readonly CountedWord[],
): WeightedWord[] {
  if (searched.length === 0) return [];
  const held = new Set(counted.map((entry) => entry.word));
  const typical = searched.reduce((sum, entry) => sum + entry.weight, 0) / searched.length;
  const unheld = words.filter((word) => !held.has(word)).map((word) => ({ word, weight: typical, unheld: true as const }));
  return [...searched, ...unheld];
}

/** For each chunk, the summed weight of the query words it holds (in its text, title or file name); each word's matches read once (see keywordScoresOf). */
export function matchedWeights(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  query: KeywordQuery,
  rowids: readonly number[],
): Map<number, number> {
  const matched = new Map<number, number>();
  if (rowids.length === 0) return matched;
  const holding = sqlite.query(
    `WITH matching AS MATERIALIZED (SELECT rowid FROM ${tables.keywords} WHERE ${tables.keywords} MATCH ?) ` +
      `SELECT rowid FROM matching WHERE rowid IN (${rowids.map(() => '?').join(', ')})`,
  );
  for (const { word, weight, unheld } of query.words) {
    if (unheld) continue;
    for (const { rowid } of holding.all(matchExpression([word]) as string, ...rowids) as { rowid: number }[]) {
      matched.set(rowid, (matched.get(rowid) ?? 0) + weight);
    }
  }
  return matched;
}

/**
 * The best `wanted` chunks by BM25, as rowid → score (higher is better). Rows in `hidden` (chunks being
 * written or deleted, vectors/chunk-sets.ts) are skipped before the best are chosen.
 */
export function keywordCandidates(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  query: KeywordQuery,
  wanted: number,
  layout: number,
  hidden: readonly RowRange[] = [],
): Map<number, number> {
  const outside = outsideRanges('rowid', hidden);
  const rows = sqlite
    .query(
      `SELECT rowid, ${bm25(tables, layout)} AS score FROM ${tables.keywords} WHERE ${tables.keywords} MATCH ?${outside.sql} ORDER BY score LIMIT ?`,
    )
    .all(query.expression, ...outside.params, wanted) as { rowid: number; score: number }[];
  return new Map(rows.map((row) => [row.rowid, -row.score]));
}

/**
 * The BM25 scores of chosen chunks (the vector search's candidates); a chunk matching no word has none.
 * The matches are scored once and then picked (MATERIALIZED): with `rowid IN (...)` inside, FTS5 runs the
 * query again for each rowid and bm25() counts the word's chunks again each time: for two words held by all
 * of 20,000 chunks, 40 candidates took 41 ms, against 13 ms scored once (same scores, measured here).
 */
export function keywordScoresOf(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  query: KeywordQuery,
  rowids: readonly number[],
  layout: number,
): Map<number, number> {
  if (rowids.length === 0) return new Map();
  const rows = sqlite
    .query(
      `WITH scored AS MATERIALIZED (SELECT rowid, ${bm25(tables, layout)} AS score FROM ${tables.keywords} WHERE ${tables.keywords} MATCH ?) ` +
        `SELECT rowid, score FROM scored WHERE rowid IN (${rowids.map(() => '?').join(', ')})`,
    )
    .all(query.expression, ...rowids) as { rowid: number; score: number }[];
  return new Map(rows.map((row) => [row.rowid, -row.score]));
}

/** FTS5's bm25() is negative, better matches more negative; a layout 1 table has one column. */
function bm25(tables: DatasetTables, layout: number): string {
  if (layout >= 3) return `bm25(${tables.keywords}, ${[...COLUMN_WEIGHTS, LEAD_WEIGHT].join(', ')})`;
  return layout >= 2 ? `bm25(${tables.keywords}, ${COLUMN_WEIGHTS.join(', ')})` : `bm25(${tables.keywords})`;
}

export interface CountedWord {
  readonly word: string;
  /** Chunks holding the word's stem (the most of its stems, when the tokenizer makes several). */
  readonly chunks: number;
}

/** Each word with how many chunks hold it; words that no chunk holds are left out (they cannot match). */
export function countWords(sqlite: SqliteDatabase, tables: DatasetTables, words: readonly string[]): CountedWord[] {
  const stems = stemsOf(sqlite, words);
  const counts = stemCounts(sqlite, tables);
  const documentsWith = sqlite.query(`SELECT doc FROM ${tables.vocabulary} WHERE term = ?`);
  const chunksWith = (stem: string) => {
    let chunks = counts.get(stem);
    if (chunks === undefined) {
      chunks = (documentsWith.get(stem) as { doc: number } | null)?.doc ?? 0;
      counts.set(stem, chunks);
    }
    return chunks;
  };
  return words
    .map((word, index) => ({ word, chunks: Math.max(0, ...(stems.get(index + 1) ?? []).map(chunksWith)) }))
    .filter((entry) => entry.chunks > 0);
}

/**
 * Counting a stem's chunks reads all its postings (fts5vocab walks its whole doclist): for a common word at
 * 100,000 chunks, more than the rest of the search, and more since every chunk also holds its document's lead
 * (layout 3). Counts are kept per keyword table while the table is unchanged: FTS5 rewrites its structure
 * record (row 10 of the table's `_data`) whenever rows are added or deleted, so a different record drops them.
 * The costly words are the common ones, which many different questions share.
 */
const countsByDatabase = new WeakMap<SqliteDatabase, Map<string, { structure: string; counts: Map<string, number> }>>();
/** Stems kept per keyword table (a few hundred kilobytes at most); past it, the table's counts start again. */
const MAX_COUNTED_STEMS = 10_000;

function stemCounts(sqlite: SqliteDatabase, tables: DatasetTables): Map<string, number> {
  let tablesCounts = countsByDatabase.get(sqlite);
  if (!tablesCounts) {
    tablesCounts = new Map();
    countsByDatabase.set(sqlite, tablesCounts);
  }
  const row = sqlite.query(`SELECT block FROM ${tables.keywords}_data WHERE id = 10`).get() as { block: Uint8Array } | null;
  const structure = row ? Buffer.from(row.block).toString('base64') : '';
  const kept = tablesCounts.get(tables.keywords);
  if (kept && kept.structure === structure && kept.counts.size < MAX_COUNTED_STEMS) return kept.counts;
  const counts = new Map<string, number>();
  tablesCounts.set(tables.keywords, { structure, counts });
  return counts;
}

/** The rarest words while their postings fit the budget; words in more than half of the chunks add nothing. */
export function affordable(counted: readonly CountedWord[], chunkCount: number): CountedWord[] {
  const candidates = counted.filter((entry) => entry.chunks <= chunkCount / 2).sort((a, b) => a.chunks - b.chunks);
  const kept: CountedWord[] = [];
  let postings = 0;
  for (const entry of candidates) {
    if (kept.length > 0 && postings + entry.chunks > POSTING_BUDGET) break;
    kept.push(entry);
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
