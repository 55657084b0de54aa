import { keywordTerms } from '../keyword-query.ts';
import {
  affordable,
  COLUMN_WEIGHTS,
  type CountedWord,
  LEAD_WEIGHT,
  PRUNE_MIN_CHUNKS,
  type WeightedWord,
  withUnheldWords,
} from '../keyword-search.ts';
import type { RowRange } from '../tables.ts';
import type { IndexRow } from './chunk-sets.ts';
import { anyRow, anyText, jsonRows, type Query } from './connection.ts';
import type { PostgresTables } from './dataset-tables.ts';
import type { Fts5Tokenizer } from './fts5-tokens.ts';

/**
 * Keyword search in the PostgreSQL store: the SQLite store's BM25 (../keyword-search.ts: the same words,
 * stop words, pruning, word weights and field weights), computed in SQL from the dataset's postings as
 * FTS5's bm25() computes it (sqlite's ext/fts5/fts5_aux.c), so that scores, and with them the ranking and
 * its calibration, carry over unchanged. For a row D tokens long (all fields), over an index of N rows
 * averaging avgdl tokens (hidden rows included, as FTS5 counts them), each query word i adds
 *
 *   idf_i * (f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b * D / avgdl)),   k1 = 1.2, b = 0.75,
 *
 * where f_i is the word's count in each field times the field's weight, and idf_i =
 * ln((N - n_i + 0.5) / (n_i + 0.5)) for the n_i rows holding it, at least 1e-6. The words are added in the
 * query's order (an ordered aggregate), and every operation is a double's, as in C: the scores are the very
 * numbers FTS5 gives (checked in test/postgres-vector-store-compare.test.ts).
 *
 * Not reproduced: a word the tokenizer cuts into several terms (unicode61 splits at marks that are not
 * diacritics, as in some Indic scripts) is a phrase for FTS5; here each of its terms counts as a word.
 */

/** FTS5's bm25() constants (fts5_aux.c). */
const K1 = 1.2;
const B = 0.75;

/** A query as the postings see it: the SQLite store's weighted words, and the terms BM25 adds, in order. */
export interface PostingsQuery {
  readonly words: readonly WeightedWord[];
  /** Each word's terms (usually one). */
  readonly wordTerms: readonly (readonly string[])[];
  /** BM25's phrases, in the query's order, with their IDF. */
  readonly phrases: readonly { readonly term: string; readonly idf: number }[];
  readonly averageLength: number;
}

/**
 * The keyword side of a query, or undefined when it has no word any chunk holds (as keywordQuery of the
 * SQLite store: words in at most half of the chunks, rarest first within the budget, in a large dataset).
 */
export async function postingsQuery(
  query: Query,
  tables: PostgresTables,
  index: IndexRow,
  tokenizer: Fts5Tokenizer,
  text: string,
): Promise<PostingsQuery | undefined> {
  const words = keywordTerms(text);
  if (words.length === 0) return undefined;
  const terms = tokenizer.words(words);
  const chunksHolding = await termCounts(query, tables, terms.flat());
  const counted: (CountedWord & { terms: readonly string[] })[] = words
    .map((word, position) => {
      const wordTerms = terms[position] ?? [];
      return { word, terms: wordTerms, chunks: Math.max(0, ...wordTerms.map((term) => chunksHolding.get(term) ?? 0)) };
    })
    .filter((entry) => entry.chunks > 0);
  const searched = index.chunkCount >= PRUNE_MIN_CHUNKS ? (affordable(counted, index.chunkCount) as typeof counted) : counted;
  if (searched.length === 0) return undefined;
  const rows = index.keywordRows;
  return {
    // The query's words no chunk holds count in its weight, as in the SQLite store (they have no terms here).
    words: withUnheldWords(
      searched.map((entry) => ({ word: entry.word, weight: Math.log(1 + index.chunkCount / entry.chunks) })),
      words,
      counted,
    ),
    wordTerms: searched.map((entry) => entry.terms),
    phrases: searched.flatMap((entry) =>
      entry.terms.map((term) => {
        const holding = chunksHolding.get(term) ?? 0;
        const idf = Math.log((rows - holding + 0.5) / (holding + 0.5));
        return { term, idf: idf <= 0 ? 1e-6 : idf };
      }),
    ),
    averageLength: index.keywordTokens / rows,
  };
}

/** How many chunks hold each term (every state, as FTS5's counts). */
export async function termCounts(query: Query, tables: PostgresTables, terms: readonly string[]): Promise<Map<string, number>> {
  if (terms.length === 0) return new Map();
  const rows = await query<{ term: string; chunks: number }>(`SELECT term, chunks FROM ${tables.terms} WHERE term ${anyText(1)}`, [
    jsonRows([...new Set(terms)]),
  ]);
  return new Map(rows.map((row) => [row.term, Number(row.chunks)]));
}

/**
 * Each of a term's postings as `p` (row_id, tokens and `frequency`, BM25's weighted count of the term in
 * the row), from the term's blocks (dataset-tables.ts). `where` is appended to the blocks' WHERE (on `b`).
 */
function postingsOf(tables: PostgresTables, term: string, where: string): string {
  const [contentWeight, titleWeight, sourceWeight] = COLUMN_WEIGHTS;
  // Each operation as fts5_aux.c's, in its order (doubles throughout); a NULL array is a field of zeros.
  const frequency =
    `coalesce(content_count, 0)::float8 * ${contentWeight}::float8 + coalesce(title_count, 0)::float8 * ${titleWeight}::float8 + ` +
    `coalesce(source_count, 0)::float8 * ${sourceWeight}::float8 + coalesce(lead_count, 0)::float8 * ${LEAD_WEIGHT}::float8`;
  // The blocks looked up through the index one term at a time: OFFSET 0 keeps the planner from making it
  // a join, which it planned as a scan of every posting when its statistics lagged behind a bulk load
  // (measured: 12,000 chunks, 1.7M postings, 660 ms instead of a few). The arrays are unnested side by
  // side in the select list (a shorter one, here a NULL one, padded with NULLs), each read once: a
  // subscript would decompress a long one again at every element, and unnest in FROM was cached per block
  // for nothing (a Memoize node, a third of the time, measured).
  return (
    `CROSS JOIN LATERAL (SELECT row_id, tokens, ${frequency} AS frequency FROM (SELECT b.first_row + unnest(b.offsets) AS row_id, ` +
    'unnest(b.tokens) AS tokens, unnest(b.content_counts) AS content_count, unnest(b.title_counts) AS title_count, ' +
    'unnest(b.source_counts) AS source_count, unnest(b.lead_counts) AS lead_count ' +
    `FROM ${tables.postings} b WHERE b.term = ${term}${where} OFFSET 0) u) p `
  );
}

/** Phrases per bit mask of the phrases a chunk holds: an int8's bits but its sign. */
const PHRASES_PER_MASK = 63;

/**
 * The phrases each chunk holds, as bit masks (`mask_0` for phrases 0 to 62, `mask_1` for the next...; a
 * query has at most 32 words, so one mask but for words the tokenizer cuts into many terms), read back by
 * heldPositions. Not string_agg: its state is a 1 kB buffer per group, which at 100,000 chunks × 512 (a
 * pgvector server, 1 GB of shared buffers, two busy cores) made the BM25 statement of a two-term query 2861
 * chunks wide take 15 ms against 7 ms with masks (the aggregate's memory 4.2 MB against 0.6 MB: a query
 * of frequent words, tens of thousands of chunks, outgrew a default 4 MB work_mem and spilled to disk).
 */
function heldMasksSql(phrases: number): string {
  return Array.from(
    { length: Math.max(1, Math.ceil(phrases / PHRASES_PER_MASK)) },
    (_, mask) =>
      `bit_or(CASE WHEN q.position / ${PHRASES_PER_MASK} = ${mask} THEN 1::int8 << (q.position % ${PHRASES_PER_MASK}) END)::text AS mask_${mask}`,
  ).join(', ');
}

/**
 * BM25 of the chunks holding any of the query's terms, as `SELECT row_id, score, mask_0...` (the phrases
 * the chunk holds, heldMasksSql), with the parameters it
 * takes from `$1` on; `blocks` is appended to the blocks' WHERE (on `b`), `where` is the postings' WHERE (on `p`).
 */
function bm25Sql(tables: PostgresTables, keyword: PostingsQuery, blocks: string, where: string): { sql: string; params: unknown[] } {
  const term =
    `q.idf * ((p.frequency * (${K1}::float8 + 1.0::float8)) / ` +
    `(p.frequency + ${K1}::float8 * (1::float8 - ${B}::float8 + ${B}::float8 * p.tokens::float8 / $2::float8)))`;
  const phrases =
    'WITH q AS MATERIALIZED (SELECT (e->>0)::int AS position, e->>1 AS term, (e->>2)::float8 AS idf FROM json_array_elements($1::text::json) e) ';
  const params = [jsonRows(keyword.phrases.map((phrase, position) => [position, phrase.term, phrase.idf])), keyword.averageLength];
  const filtered = where ? `WHERE ${where} ` : '';
  if (keyword.phrases.length === 1) {
    // One phrase, one posting per row: no aggregate. A query of common words only keeps its rarest (affordable),
    // and at 1,000,000 chunks that one was held by up to 306,431 of them, whose hash aggregate took 350 to 800 ms
    // (EXPLAIN ANALYZE): the tail of keyword search. Without it, at 300,000 chunks, the same 200 four-word
    // queries in one process: p90 95 to 138 → 40 to 69 ms, p99 229 to 368 → 109 to 135 ms. The same operations as below.
    return {
      sql: `${phrases}SELECT p.row_id, (0::float8 + coalesce(${term}, 0::float8)) AS score, '1' AS mask_0 FROM q ${postingsOf(tables, 'q.term', blocks)}${filtered}`,
      params,
    };
  }
  // Added in the query's order, as fts5_aux.c adds them, from 0 and with 0 for a term the row lacks (FTS5
  // adds its 0 too): the same number as an ordered sum, without sorting every posting for it.
  const inOrder = keyword.phrases.reduce(
    (sum, _, position) => `(${sum} + coalesce(max(CASE WHEN q.position = ${position} THEN ${term} END), 0::float8))`,
    '0::float8',
  );
  return {
    sql: `${phrases}SELECT p.row_id, ${inOrder} AS score, ${heldMasksSql(keyword.phrases.length)} FROM q ${postingsOf(tables, 'q.term', blocks)}${filtered}GROUP BY p.row_id`,
    params,
  };
}

/**
 * The best `wanted` chunks by BM25, as rowid → score (higher is better); rows in `hidden` are skipped
 * before the best are chosen. Ties go to the earlier row, as FTS5 lists them.
 */
export async function keywordCandidates(
  query: Query,
  tables: PostgresTables,
  keyword: PostingsQuery,
  wanted: number,
  hidden: readonly RowRange[],
  held: HeldPhrases,
): Promise<Map<number, number>> {
  const outside = hidden.map((_, index) => `p.row_id NOT BETWEEN $${4 + index * 2} AND $${5 + index * 2}`).join(' AND ');
  const { sql, params } = bm25Sql(tables, keyword, '', outside);
  const rows = await query<ScoredRow>(`${sql} ORDER BY score DESC, p.row_id LIMIT $3`, [
    ...params,
    wanted,
    ...hidden.flatMap((range) => [range.first, range.last]),
  ]);
  return scoresOf(rows, held);
}

/** The BM25 scores of chosen chunks (the vector search's candidates); a chunk holding no query word has none. */
export async function keywordScoresOf(
  query: Query,
  tables: PostgresTables,
  keyword: PostingsQuery,
  rowids: readonly number[],
  held: HeldPhrases,
): Promise<Map<number, number>> {
  if (rowids.length === 0) return new Map();
  // Only the blocks of writes holding a chosen row are unpacked.
  const { sql, params } = bm25Sql(tables, keyword, ' AND b.first_row <= $4 AND b.last_row >= $5', `p.row_id ${anyRow(3)}`);
  const rows = await query<ScoredRow>(sql, [...params, jsonRows(rowids), Math.max(...rowids), Math.min(...rowids)]);
  return scoresOf(rows, held);
}

/** The phrases (positions in PostingsQuery.phrases) each scored chunk holds, as its BM25 query found them. */
export type HeldPhrases = Map<number, readonly number[]>;

interface ScoredRow {
  row_id: number;
  score: number;
  /** `mask_0`, `mask_1`...: as text (drivers differ in how they hand over an int8), NULL for no phrase of the mask. */
  [mask: `mask_${number}`]: string | null;
}

function scoresOf(rows: readonly ScoredRow[], held: HeldPhrases): Map<number, number> {
  const scores = new Map<number, number>();
  for (const row of rows) {
    const rowid = Number(row.row_id);
    scores.set(rowid, Number(row.score));
    held.set(rowid, heldPositions(row));
  }
  return scores;
}

/** The positions of the phrases set in a row's masks, in ascending order. */
function heldPositions(row: ScoredRow): number[] {
  const positions: number[] = [];
  for (let mask = 0; ; mask++) {
    const bits = row[`mask_${mask}`];
    if (bits === undefined) return positions;
    if (bits === null) continue;
    let value = BigInt(bits);
    for (let bit = 0; value > 0n; bit++, value >>= 1n) if (value & 1n) positions.push(mask * PHRASES_PER_MASK + bit);
  }
}

/**
 * For each chunk, the summed weight of the query words it holds (in any field), added in the words' order:
 * from the phrases its BM25 query found in it, without reading the postings again.
 */
export function matchedWeights(keyword: PostingsQuery, held: HeldPhrases, rowids: readonly number[]): Map<number, number> {
  const matched = new Map<number, number>();
  for (const rowid of rowids) {
    const terms = new Set((held.get(rowid) ?? []).map((position) => keyword.phrases[position]?.term));
    for (const [position, { weight }] of keyword.words.entries()) {
      if ((keyword.wordTerms[position] ?? []).some((term) => terms.has(term))) matched.set(rowid, (matched.get(rowid) ?? 0) + weight);
    }
  }
  return matched;
}
