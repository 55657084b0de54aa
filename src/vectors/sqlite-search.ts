import type { Database as SqliteDatabase } from 'bun:sqlite';
import { blob, type HiddenRange, hiddenRanges } from './chunk-sets.ts';
import { type KeywordQuery, keywordCandidates, keywordQuery, keywordScoresOf, matchedWeights } from './keyword-search.ts';
import { raiseToBestPiece } from './piece-similarity.ts';
import type { Ranked, SearchMode } from './ranking.ts';
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
} from './search-assembly.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { type IndexRow, requireIndex } from './sqlite-index.ts';
import type { CandidateSet, SearchHit, SearchOptions } from './store.ts';
import { type DatasetTables, datasetTables, inRanges, outsideRanges } from './tables.ts';
import { distanceTo, MAX_KNN, type Neighbour, nearestChunks, type VectorScan } from './vector-search.ts';

/**
 * A query in the SQLite store: BM25's best (keyword-search.ts) and the vector index's nearest
 * (vector-search.ts), hidden sets left out (chunk-sets.ts), each completed with the other signal in hybrid
 * mode, each cosine raised to the chunk's closest piece (piece-similarity.ts), then scored (ranking.ts) and
 * loaded as hits; or, for the calibration's fit, the candidates unscored.
 * The assembly around the lists is shared with PostgreSQL's (search-assembly.ts).
 * Each runs in one read of the connection, so it sees one consistent state.
 */

/**
 * The dataset's best chunks for a query: candidates scored with the mode's calibrated model, those below
 * `similarityThreshold` dropped, at most `limit`. Keyword mode needs no query vector.
 */
export async function search(
  connection: StoreConnection,
  datasetId: string,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  options: SearchOptions,
): Promise<SearchHit[]> {
  const { limit, wanted } = searchSize(options);
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => {
    const found = candidatesNow(sqlite, tables, queryEmbedding, queryText, options.mode, { wanted, limit }, options.vectorScan);
    return loadHits(sqlite, ranked(found, options, limit), options.includeMetadata);
  });
}

/**
 * The candidates a search of `limit` results scores, with their evidence, unscored. `leftOut`: a file whose
 * chunks are removed, as if it were not in the dataset.
 */
export async function candidates(
  connection: StoreConnection,
  datasetId: string,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  mode: SearchMode,
  limit: number,
  leftOut?: string,
): Promise<CandidateSet> {
  const wanted = candidatesWanted(limit);
  const tables = datasetTables(datasetId);
  const found = await connection.read((sqlite) => candidatesNow(sqlite, tables, queryEmbedding, queryText, mode, { wanted, limit }));
  return leavingOut(found, leftOut);
}

/**
 * BM25's best `wanted` and the vector index's nearest `wanted` (by mode), each completed with the other
 * signal in hybrid mode, with the file each comes from.
 */
function candidatesNow(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  mode: SearchMode,
  { wanted, limit }: { wanted: number; limit: number },
  vectorScan?: VectorScan,
): CandidateSet {
  const index = requireIndex(sqlite, tables);
  const vectorSide = mode !== 'keyword';
  checkQueryVector(mode, queryEmbedding, index.dimension);
  if (index.chunkCount === 0) return noCandidates();
  // Staged and garbage sets are not the files' chunks: every list leaves their rows out.
  const hidden = hiddenRanges(sqlite, tables);
  const keyword: KeywordQuery | undefined = mode === 'vector' ? undefined : keywordQuery(sqlite, tables, index.chunkCount, queryText);
  const bm25 = keyword ? keywordCandidates(sqlite, tables, keyword, wanted, index.keywordLayout, hidden) : new Map<number, number>();
  const query = queryEmbedding ? blob(queryEmbedding) : undefined;
  const cosines = new Map<number, number>();
  if (vectorSide && query) {
    // The quantized scan oversamples by the results wanted (`limit`), not by the candidates.
    for (const hit of visibleNeighbours(sqlite, tables, index, hidden, query, wanted, limit, vectorScan)) {
      cosines.set(hit.rowid, 1 - hit.distance);
    }
  }
  if (mode === 'hybrid' && query) completeSignals(sqlite, tables, index, { query, keyword, bm25, cosines });
  const withPieces = queryEmbedding !== undefined && vectorSide;
  const { files, pieces } = chunkRowsOf(sqlite, foundRows(bm25, cosines), withPieces);
  if (withPieces) raiseToBestPiece(cosines, pieces, queryEmbedding);
  const matched = keyword ? matchedWeights(sqlite, tables, keyword, [...bm25.keys()]) : new Map<number, number>();
  return assembleCandidates({ bm25, cosines, files, matched, words: keyword?.words, chunkCount: index.chunkCount });
}

/**
 * Hybrid mode: each signal's candidates get the other signal's score too, the cosine of BM25's and the
 * BM25 of the vector index's (absent when the chunk holds no query word).
 */
function completeSignals(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  index: IndexRow,
  signals: { query: Uint8Array; keyword: KeywordQuery | undefined; bm25: Map<number, number>; cosines: Map<number, number> },
): void {
  const { query, keyword, bm25, cosines } = signals;
  for (const rowid of bm25.keys()) {
    if (cosines.has(rowid)) continue;
    const distance = distanceTo(sqlite, tables, query, rowid);
    if (distance !== undefined) cosines.set(rowid, 1 - distance);
  }
  const unscored = [...cosines.keys()].filter((rowid) => !bm25.has(rowid));
  if (!keyword) return;
  for (const [rowid, score] of keywordScoresOf(sqlite, tables, keyword, unscored, index.keywordLayout)) bm25.set(rowid, score);
}

/**
 * The nearest visible chunks. The vector index holds hidden sets' vectors too, so it is asked for as many
 * more as there are hidden vectors and those are left out; when that would pass sqlite-vec's k limit, the
 * visible vectors are scanned exactly instead (rare: a large file being replaced).
 */
function visibleNeighbours(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  index: IndexRow,
  hidden: readonly HiddenRange[],
  query: Uint8Array,
  wanted: number,
  limit: number,
  vectorScan?: VectorScan,
): Neighbour[] {
  const hiddenVectors = hidden.reduce((sum, range) => sum + range.vectors, 0);
  if (hiddenVectors === 0) return nearestChunks(sqlite, tables, index, query, wanted, limit, vectorScan);
  if (wanted + hiddenVectors > MAX_KNN) return visibleByExactScan(sqlite, tables, hidden, query, wanted);
  const all = { dimension: index.dimension, chunkCount: index.chunkCount + hiddenVectors };
  return nearestChunks(sqlite, tables, all, query, wanted + hiddenVectors, limit, vectorScan)
    .filter((hit) => !inRanges(hit.rowid, hidden))
    .slice(0, wanted);
}

function visibleByExactScan(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  hidden: readonly HiddenRange[],
  query: Uint8Array,
  wanted: number,
): Neighbour[] {
  const outside = outsideRanges('rowid', hidden);
  return sqlite
    .query(
      `SELECT rowid, vec_distance_cosine(embedding, ?) AS distance FROM ${tables.vectors} WHERE 1${outside.sql} ORDER BY distance LIMIT ?`,
    )
    .all(query, ...outside.params, wanted) as Neighbour[];
}

/** The file of each row, and (`withPieces`) the later pieces of those that have some (piece-similarity.ts). */
function chunkRowsOf(
  sqlite: SqliteDatabase,
  rowids: readonly number[],
  withPieces: boolean,
): { files: Map<number, string>; pieces: Map<number, Uint8Array> } {
  const files = new Map<number, string>();
  const pieces = new Map<number, Uint8Array>();
  if (rowids.length === 0) return { files, pieces };
  const rows = sqlite
    .query(
      `SELECT row_id, file_key, ${withPieces ? 'later_pieces' : 'NULL AS later_pieces'} FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`,
    )
    .all(...rowids) as { row_id: number; file_key: string; later_pieces: Uint8Array | null }[];
  for (const row of rows) {
    files.set(row.row_id, row.file_key);
    if (row.later_pieces) pieces.set(row.row_id, row.later_pieces);
  }
  return { files, pieces };
}

function loadHits(sqlite: SqliteDatabase, ranking: readonly Ranked[], includeMetadata: boolean): SearchHit[] {
  if (ranking.length === 0) return [];
  const rowids = ranking.map((entry) => entry.rowid);
  const rows = sqlite
    .query(`SELECT row_id, id, content, metadata FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`)
    .all(...rowids) as { row_id: number; id: string; content: string; metadata: string }[];
  return hitsOf(ranking, new Map(rows.map((row) => [row.row_id, row])), includeMetadata);
}
