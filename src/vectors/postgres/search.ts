import { raiseToBestPiece } from '../piece-similarity.ts';
import type { Ranked, SearchMode } from '../ranking.ts';
import {
  assembleCandidates,
  candidatesWanted,
  checkQueryVector,
  foundRows,
  hitsOf,
  leavingOut,
  noCandidates,
  ranked,
  searchSize,
} from '../search-assembly.ts';
import type { CandidateSet, SearchHit, SearchOptions } from '../store.ts';
import type { VectorScan } from '../vector-search.ts';
import { hiddenRanges, requireIndex } from './chunk-sets.ts';
import { anyRow, jsonRows, type PostgresConnection, type Query } from './connection.ts';
import { type PostgresTables, postgresTables } from './dataset-tables.ts';
import type { Fts5Tokenizer } from './fts5-tokens.ts';
import {
  type HeldPhrases,
  keywordCandidates,
  keywordScoresOf,
  matchedWeights,
  type PostingsQuery,
  postingsQuery,
} from './keyword-search.ts';
import { PgvectorMissingError } from './pgvector.ts';
import { distancesTo, nearestVisible } from './vector-search.ts';

/**
 * A query in the PostgreSQL store, step for step the SQLite store's (../sqlite-search.ts): BM25's best
 * (keyword-search.ts) and the vector index's nearest (vector-search.ts), hidden sets left out, each
 * completed with the other signal in hybrid mode, each cosine raised to the chunk's closest piece
 * (../piece-similarity.ts), then scored by the same ranking (../ranking.ts) and
 * loaded as hits (the assembly around the lists shared: ../search-assembly.ts). Each runs in one read-only
 * transaction, so it sees one snapshot.
 */

export interface SearchContext {
  readonly connection: PostgresConnection;
  readonly tokenizer: Fts5Tokenizer;
  /** Why vectors cannot be searched, when the server lacks pgvector. */
  readonly vectorsMissing?: string;
}

export async function search(
  context: SearchContext,
  datasetId: string,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  options: SearchOptions,
): Promise<SearchHit[]> {
  const { limit, wanted } = searchSize(options);
  const tables = postgresTables(datasetId);
  return context.connection.read(async (query) => {
    const found = await candidatesNow(context, query, tables, queryEmbedding, queryText, options.mode, wanted, options.vectorScan);
    return loadHits(query, tables, ranked(found, options, limit), options.includeMetadata);
  });
}

export async function candidates(
  context: SearchContext,
  datasetId: string,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  mode: SearchMode,
  limit: number,
  leftOut?: string,
): Promise<CandidateSet> {
  const wanted = candidatesWanted(limit);
  const tables = postgresTables(datasetId);
  const found = await context.connection.read((query) => candidatesNow(context, query, tables, queryEmbedding, queryText, mode, wanted));
  return leavingOut(found, leftOut);
}

async function candidatesNow(
  context: SearchContext,
  query: Query,
  tables: PostgresTables,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  mode: SearchMode,
  wanted: number,
  vectorScan?: VectorScan,
): Promise<CandidateSet> {
  const index = await requireIndex(query, tables);
  const vectorSide = mode !== 'keyword';
  if (vectorSide && context.vectorsMissing !== undefined) throw new PgvectorMissingError(context.vectorsMissing);
  checkQueryVector(mode, queryEmbedding, index.dimension);
  if (index.chunkCount === 0) return noCandidates();
  const hidden = await hiddenRanges(query, tables);
  const keyword: PostingsQuery | undefined =
    mode === 'vector' ? undefined : await postingsQuery(query, tables, index, context.tokenizer, queryText);
  const held: HeldPhrases = new Map();
  const bm25 = keyword ? await keywordCandidates(query, tables, keyword, wanted, hidden, held) : new Map<number, number>();
  const cosines = new Map<number, number>();
  const target = vectorSide ? queryEmbedding : undefined;
  if (target) {
    const total = index.chunkCount + hidden.reduce((sum, range) => sum + range.vectors, 0);
    for (const hit of await nearestVisible(query, tables, index.dimension, total, hidden, target, wanted, vectorScan)) {
      cosines.set(hit.rowid, 1 - hit.distance);
    }
  }
  if (mode === 'hybrid' && target) await completeSignals(query, tables, index.dimension, { target, keyword, held, bm25, cosines });
  const { files, pieces } = await chunkRowsOf(query, tables, foundRows(bm25, cosines), target !== undefined);
  if (target) raiseToBestPiece(cosines, pieces, target);
  const matched = keyword ? matchedWeights(keyword, held, [...bm25.keys()]) : new Map<number, number>();
  return assembleCandidates({ bm25, cosines, files, matched, words: keyword?.words, chunkCount: index.chunkCount });
}

/**
 * Hybrid mode: each signal's candidates get the other signal's score too, the cosine of BM25's and the
 * BM25 of the vector index's (absent when the chunk holds no query word).
 */
async function completeSignals(
  query: Query,
  tables: PostgresTables,
  dimension: number,
  signals: {
    target: Float32Array;
    keyword: PostingsQuery | undefined;
    held: HeldPhrases;
    bm25: Map<number, number>;
    cosines: Map<number, number>;
  },
): Promise<void> {
  const { target, keyword, held, bm25, cosines } = signals;
  const missing = [...bm25.keys()].filter((rowid) => !cosines.has(rowid));
  for (const [rowid, distance] of await distancesTo(query, tables, dimension, target, missing)) cosines.set(rowid, 1 - distance);
  const unscored = [...cosines.keys()].filter((rowid) => !bm25.has(rowid));
  if (!keyword) return;
  for (const [rowid, score] of await keywordScoresOf(query, tables, keyword, unscored, held)) bm25.set(rowid, score);
}

/** The file of each row, and (`withPieces`) the later pieces of those that have some (../piece-similarity.ts). */
async function chunkRowsOf(
  query: Query,
  tables: PostgresTables,
  rowids: readonly number[],
  withPieces: boolean,
): Promise<{ files: Map<number, string>; pieces: Map<number, Uint8Array> }> {
  const files = new Map<number, string>();
  const pieces = new Map<number, Uint8Array>();
  if (rowids.length === 0) return { files, pieces };
  const rows = await query<{ row_id: number; file_key: string; later_pieces: Uint8Array | null }>(
    `SELECT row_id, file_key, ${withPieces ? 'later_pieces' : 'NULL AS later_pieces'} FROM ${tables.chunks} WHERE row_id ${anyRow(1)}`,
    [jsonRows(rowids)],
  );
  for (const row of rows) {
    files.set(Number(row.row_id), row.file_key);
    if (row.later_pieces) pieces.set(Number(row.row_id), row.later_pieces);
  }
  return { files, pieces };
}

async function loadHits(query: Query, tables: PostgresTables, ranking: readonly Ranked[], includeMetadata: boolean): Promise<SearchHit[]> {
  if (ranking.length === 0) return [];
  const rows = await query<{ row_id: number; id: string; content: string; metadata: string }>(
    `SELECT row_id, id, content, metadata FROM ${tables.chunks} WHERE row_id ${anyRow(1)}`,
    [jsonRows(ranking.map((entry) => entry.rowid))],
  );
  return hitsOf(ranking, new Map(rows.map((row) => [Number(row.row_id), row])), includeMetadata);
}
