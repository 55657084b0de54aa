import type { Database as SqliteDatabase } from 'bun:sqlite';
import { type Clock, isoNow } from '../util/clock.ts';
import { discardStaged, keywordInsert } from './chunk-sets.ts';
import type { GarbageCollector } from './garbage-collector.ts';
import { checkDimension, checkSameDimension } from './index-dimension.ts';
import { VECTOR_LAYOUT } from './piece-similarity.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { type FencingLease, VectorIndexMissingError } from './store.ts';
import {
  createKeywordTablesSql,
  createTablesSql,
  type DatasetTables,
  datasetTables,
  dropKeywordTablesSql,
  dropTablesSql,
  KEYWORD_LAYOUT,
  leadOf,
  sourceWords,
} from './tables.ts';

/**
 * A dataset's index in the SQLite store, from its creation to its drop: its row in `vector_indexes`, its own
 * vec0 and FTS5 tables (tables.ts), an older keyword table rebuilt in the current layout, and how much of
 * the database it takes.
 */

/** Chunk rows deleted per transaction when a dataset's index is dropped (plain rows: cheaper than garbage). */
const DROP_ROWS = 5_000;

export interface IndexRow {
  readonly dimension: number;
  /** The visible chunks: what searches see. */
  readonly chunkCount: number;
  /** The columns of the keyword table (tables.ts, KEYWORD_LAYOUT). */
  readonly keywordLayout: number;
  /** Which vectors its chunks have (piece-similarity.ts, VECTOR_LAYOUT). */
  readonly vectorLayout: number;
}

export function readIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow | undefined {
  const row = sqlite
    .query(
      'SELECT dimension, chunk_count AS chunkCount, keyword_layout AS keywordLayout, vector_layout AS vectorLayout FROM vector_indexes WHERE dataset_id = ?',
    )
    .get(tables.datasetId) as IndexRow | null;
  return row ?? undefined;
}

export function requireIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow {
  const index = readIndex(sqlite, tables);
  if (!index) throw new VectorIndexMissingError(tables.datasetId);
  return index;
}

/**
 * Creates the dataset's tables; again with the same dimension does nothing (but rebuilds an older keyword
 * table), with another it fails. Staged chunks are what a stop or a crash left: they become garbage (under
 * the dataset's `lease`, when one is given: store.ts, FencingLease). The index's `created_at` is the `clock`'s.
 */
export async function createIndex(
  connection: StoreConnection,
  garbage: GarbageCollector,
  datasetId: string,
  dimension: number,
  clock: Clock,
  lease?: FencingLease,
): Promise<void> {
  const tables = datasetTables(datasetId);
  checkDimension(dimension);
  await connection.write((sqlite) => {
    const existing = readIndex(sqlite, tables);
    checkSameDimension(datasetId, existing, dimension);
    if (existing && existing.keywordLayout < KEYWORD_LAYOUT) rebuildKeywords(sqlite, tables);
    for (const statement of createTablesSql(tables, dimension)) sqlite.run(statement);
    if (!existing) {
      sqlite
        .query(
          'INSERT INTO vector_indexes (dataset_id, dimension, chunk_count, keyword_layout, vector_layout, created_at) VALUES (?, ?, 0, ?, ?, ?)',
        )
        .run(tables.datasetId, dimension, KEYWORD_LAYOUT, VECTOR_LAYOUT, isoNow(clock));
    }
    discardStaged(sqlite, tables);
  }, lease);
  // What a stop interrupted (or a crash left staged) is deleted now.
  garbage.inBackground();
}

/**
 * Drops the dataset's tables, chunks and calibration; a dataset without an index is left as it is. Its chunk
 * rows go first, in batches, so no transaction grows with the size of the dataset.
 */
export async function dropIndex(connection: StoreConnection, datasetId: string): Promise<void> {
  const tables = datasetTables(datasetId);
  const batch = () =>
    connection.write(
      (sqlite) =>
        sqlite
          .query('DELETE FROM vector_chunks WHERE row_id IN (SELECT row_id FROM vector_chunks WHERE dataset_id = ? LIMIT ?)')
          .run(tables.datasetId, DROP_ROWS).changes,
    );
  while ((await batch()) === DROP_ROWS);
  await connection.write((sqlite) => {
    for (const statement of dropTablesSql(tables)) sqlite.run(statement);
    sqlite.query('DELETE FROM vector_chunks WHERE dataset_id = ?').run(tables.datasetId);
    sqlite.query('DELETE FROM vector_sets WHERE dataset_id = ?').run(tables.datasetId);
    sqlite.query('DELETE FROM vector_indexes WHERE dataset_id = ?').run(tables.datasetId);
    sqlite.query('DELETE FROM vector_calibrations WHERE dataset_id = ?').run(tables.datasetId);
  });
}

/**
 * About how many bytes a dataset's index takes in the database: the pages of its vector and keyword
 * tables (SQLite's dbstat, one b-tree each) and its chunks' text and metadata in the shared table.
 */
export async function diskUse(connection: StoreConnection, datasetId: string): Promise<number> {
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => {
    const names = sqlite
      .query("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE ? OR name LIKE ?)")
      .all(`${tables.vectors}%`, `${tables.keywords}%`) as { name: string }[];
    const pages = sqlite.query('SELECT pgsize FROM dbstat WHERE name = ? AND aggregate = TRUE');
    let bytes = 0;
    for (const { name } of names) bytes += (pages.get(name) as { pgsize: number } | null)?.pgsize ?? 0;
    const rows = sqlite
      .query(
        'SELECT COALESCE(SUM(LENGTH(content) + LENGTH(metadata) + LENGTH(id) + LENGTH(file_key)), 0) AS bytes FROM vector_chunks WHERE dataset_id = ?',
      )
      .get(tables.datasetId) as { bytes: number };
    return bytes + rows.bytes;
  });
}

/**
 * Rebuilds a dataset's keyword table in the current layout from the chunks' stored text and metadata
 * (inside the caller's transaction): no file is read or embedded again.
 */
function rebuildKeywords(sqlite: SqliteDatabase, tables: DatasetTables): void {
  for (const statement of dropKeywordTablesSql(tables)) sqlite.run(statement);
  for (const statement of createKeywordTablesSql(tables)) sqlite.run(statement);
  const insert = keywordInsert(sqlite, tables, KEYWORD_LAYOUT);
  // Each chunk with its set's first chunk, whose opening is the document's lead.
  const rows = sqlite
    .query(
      'SELECT c.row_id, c.file_key, c.content, c.metadata, f.content AS first FROM vector_chunks c ' +
        'LEFT JOIN vector_sets s ON s.dataset_id = c.dataset_id AND c.row_id BETWEEN s.first_row AND s.last_row ' +
        'LEFT JOIN vector_chunks f ON f.row_id = s.first_row WHERE c.dataset_id = ?',
    )
    .iterate(tables.datasetId) as Iterable<{
    row_id: number;
    file_key: string;
    content: string;
    metadata: string;
    first: string | null;
  }>;
  for (const row of rows) insert(row.row_id, row.content, titleOf(row.metadata), sourceWords(row.file_key), leadOf(row.first ?? ''));
  sqlite.query('UPDATE vector_indexes SET keyword_layout = ? WHERE dataset_id = ?').run(KEYWORD_LAYOUT, tables.datasetId);
}

function titleOf(metadata: string): string {
  const title = (JSON.parse(metadata) as { title?: unknown }).title;
  return typeof title === 'string' ? title : '';
}
