import type { Database as SqliteDatabase } from 'bun:sqlite';
import { now, type OpenedDatabase } from '../db/database.ts';
import type { Calibration } from './calibration.ts';
import { type KeywordQuery, keywordCandidates, keywordQuery, keywordScoresOf, matchedWeights } from './keyword-search.ts';
import { type Candidate, type QueryFacts, type Ranked, rank, type SearchMode } from './ranking.ts';
import {
  createKeywordTablesSql,
  createTablesSql,
  type DatasetTables,
  datasetTables,
  dropKeywordTablesSql,
  dropTablesSql,
  hasBitColumn,
  KEYWORD_LAYOUT,
  sourceWords,
} from './tables.ts';
import { distanceTo, MAX_KNN, nearestChunks, type VectorScan } from './vector-search.ts';

export type { SearchMode } from './ranking.ts';
export type { VectorScan } from './vector-search.ts';

export interface SearchOptions {
  readonly mode: SearchMode;
  readonly limit: number;
  /** 0..1; chunks whose calibrated score is below it are dropped, in every mode. */
  readonly similarityThreshold: number;
  readonly includeMetadata: boolean;
  /** The dataset's embedder's models (calibration.ts, calibrationFor). */
  readonly calibration: Calibration;
  readonly vectorScan?: VectorScan;
}

/** One returned document, as the query response carries it (API-CONTRACT 5). */
export interface SearchHit {
  readonly document_id: string;
  readonly content: string;
  /** The calibrated relevance in [0, 1] (calibration.ts), never increasing down the list. */
  readonly similarity_score: number;
  readonly metadata: Record<string, unknown>;
}

/** Every candidate of a query with its evidence, as the evaluation's fit reads it (scripts/eval/fit.ts). */
export interface CandidateSet {
  readonly candidates: Candidate[];
  readonly facts: QueryFacts;
}

export interface ChunkInput {
  /** Kept as the chunk's `document_id`; a UUID is made when absent. */
  readonly id?: string;
  readonly content: string;
  readonly metadata: Record<string, unknown>;
  readonly embedding: Float32Array;
}

export interface IndexInfo {
  readonly dimension: number;
  readonly chunkCount: number;
}

export class VectorIndexMissingError extends Error {
  override readonly name = 'VectorIndexMissingError';
  constructor(datasetId: string) {
    super(`dataset ${datasetId} has no vector index`);
  }
}

/**
 * Candidates per wanted result, from each list: the scores re-order them (and lower repeated files), so
 * more than `limit` must be looked at.
 */
const CANDIDATES_PER_RESULT = 4;
const MAX_DIMENSION = 8192;

function blob(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/**
 * Chunks of every dataset, searchable by vector (sqlite-vec `vec0`, cosine) and keyword (FTS5, BM25).
 * Per dataset: one vec0 table, one contentless FTS5 table, rows in the shared `vector_chunks` table;
 * the three share a rowid. All work runs on the one connection through `exclusive`, synchronously,
 * so each write is one SQLite transaction and a search reads one consistent state.
 */
export class VectorStore {
  constructor(private readonly opened: OpenedDatabase) {}

  /** Creates the dataset's tables; again with the same dimension does nothing, with another it fails. */
  async createDatasetIndex(datasetId: string, dimension: number): Promise<void> {
    const tables = datasetTables(datasetId);
    if (!Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION) {
      throw new Error(`vector dimension must be an integer from 1 to ${MAX_DIMENSION}, got ${dimension}`);
    }
    return this.opened.exclusive((sqlite) =>
      sqlite
        .transaction(() => {
          const existing = readIndex(sqlite, tables);
          if (existing && existing.dimension !== dimension) {
            throw new Error(`dataset ${datasetId} already has a ${existing.dimension}-dimension index, not ${dimension}`);
          }
          if (existing && existing.keywordLayout < KEYWORD_LAYOUT) rebuildKeywords(sqlite, tables);
          for (const statement of createTablesSql(tables, dimension)) sqlite.run(statement);
          if (!existing) {
            sqlite
              .query('INSERT INTO vector_indexes (dataset_id, dimension, chunk_count, keyword_layout, created_at) VALUES (?, ?, 0, ?, ?)')
              .run(tables.datasetId, dimension, KEYWORD_LAYOUT, now());
          }
        })
        .immediate(),
    );
  }

  /** Drops the dataset's tables and chunks; a dataset without an index is left as it is. */
  async dropDatasetIndex(datasetId: string): Promise<void> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) =>
      sqlite
        .transaction(() => {
          for (const statement of dropTablesSql(tables)) sqlite.run(statement);
          sqlite.query('DELETE FROM vector_chunks WHERE dataset_id = ?').run(tables.datasetId);
          sqlite.query('DELETE FROM vector_indexes WHERE dataset_id = ?').run(tables.datasetId);
        })
        .immediate(),
    );
  }

  async indexInfo(datasetId: string): Promise<IndexInfo | undefined> {
    const tables = datasetTables(datasetId);
    const index = await this.opened.exclusive((sqlite) => readIndex(sqlite, tables));
    return index && { dimension: index.dimension, chunkCount: index.chunkCount };
  }

  /**
   * Replaces every chunk of one file (`fileKey`, e.g. its relative path) with `chunks`, in one
   * transaction: a search sees the old chunks or the new ones, never a mix or neither. Returns the ids.
   */
  async replaceFileChunks(datasetId: string, fileKey: string, chunks: readonly ChunkInput[]): Promise<string[]> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) =>
      sqlite
        .transaction(() => {
          const index = requireIndex(sqlite, tables);
          const rows = chunks.map((chunk) => validateChunk(chunk, index.dimension));
          const removed = deleteFile(sqlite, tables, fileKey);
          const insertChunk = sqlite.query(
            'INSERT INTO vector_chunks (id, dataset_id, file_key, content, metadata) VALUES (?, ?, ?, ?, ?) RETURNING row_id',
          );
          const insertVector = sqlite.query(
            hasBitColumn(index.dimension)
              ? `INSERT INTO ${tables.vectors} (rowid, embedding, embedding_bits) VALUES (?, ?, vec_quantize_binary(?))`
              : `INSERT INTO ${tables.vectors} (rowid, embedding) VALUES (?, ?)`,
          );
          const insertText = keywordInsert(sqlite, tables, index.keywordLayout);
          for (const row of rows) {
            const inserted = insertChunk.get(row.id, tables.datasetId, fileKey, row.content, row.metadata) as {
              row_id: number;
            };
            const vector = blob(row.embedding);
            if (hasBitColumn(index.dimension)) insertVector.run(inserted.row_id, vector, vector);
            else insertVector.run(inserted.row_id, vector);
            insertText(inserted.row_id, row.content, row.title, fileKey);
          }
          adjustCount(sqlite, tables, rows.length - removed);
          return rows.map((row) => row.id);
        })
        .immediate(),
    );
  }

  /** Removes every chunk of one file, in one transaction. Returns how many there were. */
  async deleteFileChunks(datasetId: string, fileKey: string): Promise<number> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) =>
      sqlite
        .transaction(() => {
          requireIndex(sqlite, tables);
          const removed = deleteFile(sqlite, tables, fileKey);
          adjustCount(sqlite, tables, -removed);
          return removed;
        })
        .immediate(),
    );
  }

  /**
   * The dataset's best chunks for a query (API-CONTRACT 5): candidates from BM25 and/or the vector index,
   * scored with the mode's calibrated model (ranking.ts), chunks below `similarityThreshold` dropped,
   * at most `limit`. Keyword mode needs no query vector.
   */
  async search(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    options: SearchOptions,
  ): Promise<SearchHit[]> {
    const limit = Math.floor(options.limit);
    if (!(limit >= 1)) throw new Error(`search limit must be at least 1, got ${options.limit}`);
    const wanted = Math.min(MAX_KNN, limit * CANDIDATES_PER_RESULT);
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => {
      const found = candidatesNow(sqlite, tables, queryEmbedding, queryText, options.mode, { wanted, limit }, options.vectorScan);
      const ranked = rank(found.candidates, found.facts, options.mode, options.calibration, options.similarityThreshold).slice(0, limit);
      return loadHits(sqlite, ranked, options.includeMetadata);
    });
  }

  /** The candidates a search of `limit` results scores, with their evidence, unscored (for fitting the calibration). */
  async candidates(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    mode: SearchMode,
    limit: number,
  ): Promise<CandidateSet> {
    const wanted = Math.min(MAX_KNN, limit * CANDIDATES_PER_RESULT);
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => candidatesNow(sqlite, tables, queryEmbedding, queryText, mode, { wanted, limit }));
  }
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
  if (vectorSide && queryEmbedding === undefined) throw new Error(`${mode} search needs the query's vector`);
  if (queryEmbedding && queryEmbedding.length !== index.dimension) {
    throw new Error(`query vector has ${queryEmbedding.length} dimensions, dataset index has ${index.dimension}`);
  }
  if (index.chunkCount === 0) return { candidates: [], facts: { queryWeight: 0, chunkCount: 0 } };
  const keyword: KeywordQuery | undefined = mode === 'vector' ? undefined : keywordQuery(sqlite, tables, index.chunkCount, queryText);
  const bm25 = keyword ? keywordCandidates(sqlite, tables, keyword, wanted, index.keywordLayout) : new Map<number, number>();
  const query = queryEmbedding ? blob(queryEmbedding) : undefined;
  const cosines = new Map<number, number>();
  if (vectorSide && query) {
    // The quantized scan oversamples by the results wanted (`limit`), not by the candidates.
    for (const hit of nearestChunks(sqlite, tables, index, query, wanted, limit, vectorScan)) cosines.set(hit.rowid, 1 - hit.distance);
  }
  if (mode === 'hybrid' && query) {
    for (const rowid of bm25.keys()) {
      if (cosines.has(rowid)) continue;
      const distance = distanceTo(sqlite, tables, query, rowid);
      if (distance !== undefined) cosines.set(rowid, 1 - distance);
    }
    const unscored = [...cosines.keys()].filter((rowid) => !bm25.has(rowid));
    if (keyword)
      for (const [rowid, score] of keywordScoresOf(sqlite, tables, keyword, unscored, index.keywordLayout)) bm25.set(rowid, score);
  }
  const rowids = [...new Set([...bm25.keys(), ...cosines.keys()])];
  const files = fileKeysOf(sqlite, rowids);
  const matched = keyword ? matchedWeights(sqlite, tables, keyword, [...bm25.keys()]) : new Map<number, number>();
  const candidates = rowids.map((rowid) => ({
    rowid,
    fileKey: files.get(rowid) ?? '',
    ...(bm25.has(rowid) ? { bm25: bm25.get(rowid) as number, matched: matched.get(rowid) ?? 0 } : {}),
    ...(cosines.has(rowid) ? { cosine: cosines.get(rowid) as number } : {}),
  }));
  const queryWeight = keyword?.words.reduce((sum, word) => sum + word.weight, 0) ?? 0;
  return { candidates, facts: { queryWeight, chunkCount: index.chunkCount } };
}

function fileKeysOf(sqlite: SqliteDatabase, rowids: readonly number[]): Map<number, string> {
  if (rowids.length === 0) return new Map();
  const rows = sqlite
    .query(`SELECT row_id, file_key FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`)
    .all(...rowids) as { row_id: number; file_key: string }[];
  return new Map(rows.map((row) => [row.row_id, row.file_key]));
}

interface IndexRow {
  readonly dimension: number;
  readonly chunkCount: number;
  /** The columns of the keyword table (tables.ts, KEYWORD_LAYOUT). */
  readonly keywordLayout: number;
}

function readIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow | undefined {
  const row = sqlite
    .query('SELECT dimension, chunk_count AS chunkCount, keyword_layout AS keywordLayout FROM vector_indexes WHERE dataset_id = ?')
    .get(tables.datasetId) as IndexRow | null;
  return row ?? undefined;
}

/** A keyword row of a chunk, in the table's layout: the text, and in layout 2 its document's title and file name. */
function keywordInsert(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  layout: number,
): (rowid: number, content: string, title: string, fileKey: string) => void {
  if (layout < 2) {
    const insert = sqlite.query(`INSERT INTO ${tables.keywords} (rowid, content) VALUES (?, ?)`);
    return (rowid, content) => void insert.run(rowid, content);
  }
  const insert = sqlite.query(`INSERT INTO ${tables.keywords} (rowid, content, title, source) VALUES (?, ?, ?, ?)`);
  return (rowid, content, title, fileKey) => void insert.run(rowid, content, title, sourceWords(fileKey));
}

/**
 * Rebuilds a dataset's keyword table in the current layout from the chunks' stored text and metadata
 * (inside the caller's transaction): no file is read or embedded again.
 */
function rebuildKeywords(sqlite: SqliteDatabase, tables: DatasetTables): void {
  for (const statement of dropKeywordTablesSql(tables)) sqlite.run(statement);
  for (const statement of createKeywordTablesSql(tables)) sqlite.run(statement);
  const insert = keywordInsert(sqlite, tables, KEYWORD_LAYOUT);
  const rows = sqlite
    .query('SELECT row_id, file_key, content, metadata FROM vector_chunks WHERE dataset_id = ?')
    .iterate(tables.datasetId) as Iterable<{
    row_id: number;
    file_key: string;
    content: string;
    metadata: string;
  }>;
  for (const row of rows) insert(row.row_id, row.content, titleOf(row.metadata), row.file_key);
  sqlite.query('UPDATE vector_indexes SET keyword_layout = ? WHERE dataset_id = ?').run(KEYWORD_LAYOUT, tables.datasetId);
}

function titleOf(metadata: string): string {
  const title = (JSON.parse(metadata) as { title?: unknown }).title;
  return typeof title === 'string' ? title : '';
}

function requireIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow {
  const index = readIndex(sqlite, tables);
  if (!index) throw new VectorIndexMissingError(tables.datasetId);
  return index;
}

function adjustCount(sqlite: SqliteDatabase, tables: DatasetTables, delta: number): void {
  if (delta === 0) return;
  sqlite.query('UPDATE vector_indexes SET chunk_count = chunk_count + ? WHERE dataset_id = ?').run(delta, tables.datasetId);
}

function deleteFile(sqlite: SqliteDatabase, tables: DatasetTables, fileKey: string): number {
  const rows = sqlite.query('SELECT row_id FROM vector_chunks WHERE dataset_id = ? AND file_key = ?').all(tables.datasetId, fileKey) as {
    row_id: number;
  }[];
  if (rows.length === 0) return 0;
  const deleteVector = sqlite.query(`DELETE FROM ${tables.vectors} WHERE rowid = ?`);
  const deleteText = sqlite.query(`DELETE FROM ${tables.keywords} WHERE rowid = ?`);
  for (const { row_id } of rows) {
    deleteVector.run(row_id);
    deleteText.run(row_id);
  }
  sqlite.query('DELETE FROM vector_chunks WHERE dataset_id = ? AND file_key = ?').run(tables.datasetId, fileKey);
  return rows.length;
}

interface ValidChunk {
  readonly id: string;
  readonly content: string;
  readonly metadata: string;
  /** The document's title (metadata.title), indexed for keywords beside the text. */
  readonly title: string;
  readonly embedding: Float32Array;
}

function validateChunk(chunk: ChunkInput, dimension: number): ValidChunk {
  if (!(chunk.embedding instanceof Float32Array) || chunk.embedding.length !== dimension) {
    const got = chunk.embedding instanceof Float32Array ? `${chunk.embedding.length} dimensions` : 'no Float32Array';
    throw new Error(`chunk embedding must have ${dimension} dimensions, got ${got}`);
  }
  if (!chunk.embedding.every(Number.isFinite)) throw new Error('chunk embedding holds a value that is not a finite number');
  if (typeof chunk.content !== 'string') throw new Error('chunk content must be a string');
  return {
    id: chunk.id ?? crypto.randomUUID(),
    content: chunk.content,
    metadata: JSON.stringify(chunk.metadata ?? {}),
    title: typeof chunk.metadata?.title === 'string' ? chunk.metadata.title : '',
    embedding: chunk.embedding,
  };
}

function loadHits(sqlite: SqliteDatabase, ranked: readonly Ranked[], includeMetadata: boolean): SearchHit[] {
  if (ranked.length === 0) return [];
  const rowids = ranked.map((entry) => entry.rowid);
  const rows = sqlite
    .query(`SELECT row_id, id, content, metadata FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`)
    .all(...rowids) as { row_id: number; id: string; content: string; metadata: string }[];
  const byRowid = new Map(rows.map((row) => [row.row_id, row]));
  const hits: SearchHit[] = [];
  for (const { rowid, score } of ranked) {
    const row = byRowid.get(rowid);
    if (!row) continue;
    hits.push({
      document_id: row.id,
      content: row.content,
      similarity_score: score,
      metadata: includeMetadata ? (JSON.parse(row.metadata) as Record<string, unknown>) : {},
    });
  }
  return hits;
}
