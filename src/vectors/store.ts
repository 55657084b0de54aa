import type { Database as SqliteDatabase } from 'bun:sqlite';
import { now, type OpenedDatabase } from '../db/database.ts';
import { reciprocalRankFusion } from './fusion.ts';
import { keywordChunks } from './keyword-search.ts';
import { createTablesSql, type DatasetTables, datasetTables, dropTablesSql, hasBitColumn } from './tables.ts';
import { distanceTo, MAX_KNN, nearestChunks, similarityOf, type VectorScan } from './vector-search.ts';

export type { VectorScan } from './vector-search.ts';

export type SearchMode = 'vector' | 'keyword' | 'hybrid';

export interface SearchOptions {
  readonly mode: SearchMode;
  readonly limit: number;
  /** 0..1; chunks less similar than this are dropped, in every mode. */
  readonly similarityThreshold: number;
  readonly includeMetadata: boolean;
  readonly vectorScan?: VectorScan;
}

/** One returned document, as the query response carries it (API-CONTRACT 5). */
export interface SearchHit {
  readonly document_id: string;
  readonly content: string;
  /** 1 - cosine distance between the query and the chunk, clamped to [0, 1], whatever the mode. */
  readonly similarity_score: number;
  readonly metadata: Record<string, unknown>;
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

/** Hybrid fuses this many candidates per wanted result from each list; keyword mode keeps as many so the threshold can drop some. */
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
          for (const statement of createTablesSql(tables, dimension)) sqlite.run(statement);
          if (!existing) {
            sqlite
              .query('INSERT INTO vector_indexes (dataset_id, dimension, chunk_count, created_at) VALUES (?, ?, 0, ?)')
              .run(tables.datasetId, dimension, now());
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
    return this.opened.exclusive((sqlite) => readIndex(sqlite, tables));
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
          const insertText = sqlite.query(`INSERT INTO ${tables.keywords} (rowid, content) VALUES (?, ?)`);
          for (const row of rows) {
            const inserted = insertChunk.get(row.id, tables.datasetId, fileKey, row.content, row.metadata) as {
              row_id: number;
            };
            const vector = blob(row.embedding);
            if (hasBitColumn(index.dimension)) insertVector.run(inserted.row_id, vector, vector);
            else insertVector.run(inserted.row_id, vector);
            insertText.run(inserted.row_id, row.content);
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
   * The dataset's best chunks for a query (API-CONTRACT 5). `vector` orders by similarity, `keyword` by
   * BM25, `hybrid` by reciprocal-rank fusion of both; every mode scores by cosine similarity and drops
   * chunks below `similarityThreshold`, then keeps `limit`.
   */
  async search(datasetId: string, queryEmbedding: Float32Array, queryText: string, options: SearchOptions): Promise<SearchHit[]> {
    const tables = datasetTables(datasetId);
    const limit = Math.floor(options.limit);
    if (!(limit >= 1)) throw new Error(`search limit must be at least 1, got ${options.limit}`);
    return this.opened.exclusive((sqlite) => {
      const index = requireIndex(sqlite, tables);
      if (queryEmbedding.length !== index.dimension) {
        throw new Error(`query vector has ${queryEmbedding.length} dimensions, dataset index has ${index.dimension}`);
      }
      if (index.chunkCount === 0) return [];
      const query = blob(queryEmbedding);
      const candidates = Math.min(MAX_KNN, limit * CANDIDATES_PER_RESULT);

      const nearest =
        options.mode === 'keyword'
          ? []
          : nearestChunks(sqlite, tables, index, query, options.mode === 'vector' ? limit : candidates, limit, options.vectorScan);
      const keywordHits = options.mode === 'vector' ? [] : keywordChunks(sqlite, tables, index.chunkCount, queryText, candidates);

      const distances = new Map(nearest.map((hit) => [hit.rowid, hit.distance]));
      for (const rowid of keywordHits) {
        if (distances.has(rowid)) continue;
        const distance = distanceTo(sqlite, tables, query, rowid);
        if (distance !== undefined) distances.set(rowid, distance);
      }
      const similarity = (rowid: number) => similarityOf(distances.get(rowid) ?? Number.NaN);

      let order: number[];
      if (options.mode === 'vector') order = nearest.map((hit) => hit.rowid);
      else if (options.mode === 'keyword') order = keywordHits;
      else {
        const fused = reciprocalRankFusion([nearest.map((hit) => hit.rowid), keywordHits]);
        order = [...fused.keys()].sort((a, b) => (fused.get(b) ?? 0) - (fused.get(a) ?? 0) || similarity(b) - similarity(a));
      }
      const selected = order.filter((rowid) => distances.has(rowid) && similarity(rowid) >= options.similarityThreshold).slice(0, limit);
      return loadHits(sqlite, selected, similarity, options.includeMetadata);
    });
  }
}

interface IndexRow {
  readonly dimension: number;
  readonly chunkCount: number;
}

function readIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow | undefined {
  const row = sqlite
    .query('SELECT dimension, chunk_count AS chunkCount FROM vector_indexes WHERE dataset_id = ?')
    .get(tables.datasetId) as IndexRow | null;
  return row ?? undefined;
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
    embedding: chunk.embedding,
  };
}

function loadHits(
  sqlite: SqliteDatabase,
  rowids: readonly number[],
  similarity: (rowid: number) => number,
  includeMetadata: boolean,
): SearchHit[] {
  if (rowids.length === 0) return [];
  const rows = sqlite
    .query(`SELECT row_id, id, content, metadata FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`)
    .all(...rowids) as { row_id: number; id: string; content: string; metadata: string }[];
  const byRowid = new Map(rows.map((row) => [row.row_id, row]));
  const hits: SearchHit[] = [];
  for (const rowid of rowids) {
    const row = byRowid.get(rowid);
    if (!row) continue;
    hits.push({
      document_id: row.id,
      content: row.content,
      similarity_score: similarity(rowid),
      metadata: includeMetadata ? (JSON.parse(row.metadata) as Record<string, unknown>) : {},
    });
  }
  return hits;
}
