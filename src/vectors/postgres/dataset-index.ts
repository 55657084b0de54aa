import { type Clock, isoNow } from '../../util/clock.ts';
import type { GarbageCollector } from '../garbage-collector.ts';
import { checkDimension, checkSameDimension } from '../index-dimension.ts';
import { VECTOR_LAYOUT } from '../piece-similarity.ts';
import type { FencingLease } from '../store.ts';
import { discardStaged, inKnownLayout, readIndex } from './chunk-sets.ts';
import { jsonRows, type PostgresConnection, type Query } from './connection.ts';
import {
  allTables,
  createKeywordTablesSql,
  createVectorTableSql,
  POSTINGS_LAYOUT,
  type PostgresTables,
  postgresTables,
} from './dataset-tables.ts';

/**
 * A dataset's index in the PostgreSQL store, from its creation to its drop: its row in `vector_indexes`, its
 * own tables (dataset-tables.ts; the vectors' only where the server has pgvector), and their size on disk.
 */

/**
 * Creates the dataset's tables; again with the same dimension does nothing (but creates the vectors' table
 * when pgvector has come meanwhile), with another it fails, as it does when the postings are in a layout this
 * knode does not read (dataset-tables.ts, PostingsLayoutError). Staged chunks are what a stop or a crash left:
 * they become garbage, under the dataset's `lease` when one is given (../store.ts, FencingLease): a former
 * holder must not discard what its successor is staging. Replicas starting the same dataset take turns (a
 * transaction-scoped advisory lock). The index's `created_at` is the `clock`'s.
 */
export async function createIndex(
  connection: PostgresConnection,
  garbage: GarbageCollector,
  datasetId: string,
  dimension: number,
  withVectors: boolean,
  clock: Clock,
  lease?: FencingLease,
): Promise<void> {
  const tables = postgresTables(datasetId);
  checkDimension(dimension);
  await connection.write(async (query) => {
    await lockDataset(query, tables);
    const existing = await readIndex(query, tables);
    checkSameDimension(datasetId, existing, dimension);
    if (existing) inKnownLayout(tables, existing);
    for (const statement of createKeywordTablesSql(tables)) await query(statement);
    // A chunk table made before chunks had later pieces (../piece-similarity.ts) gains the column, empty. Only when
    // missing, as below.
    if (!(await hasColumn(query, tables.chunks, 'later_pieces'))) await query(`ALTER TABLE ${tables.chunks} ADD COLUMN later_pieces BYTEA`);
    // Only when missing: its ALTER TABLE would lock the vectors out of every search at each start.
    if (withVectors && !(await hasVectorTable(query, tables))) {
      for (const statement of createVectorTableSql(tables, dimension)) await query(statement);
    }
    if (!existing) {
      await query(
        'INSERT INTO vector_indexes (dataset_id, dimension, postings_layout, vector_layout, created_at) VALUES ($1, $2, $3, $4, $5)',
        [tables.datasetId, dimension, POSTINGS_LAYOUT, VECTOR_LAYOUT, isoNow(clock)],
      );
    }
    await discardStaged(query, tables);
  }, lease);
  garbage.inBackground();
}

/**
 * Drops the dataset's tables, chunks and calibration; a dataset without an index is left as it is. Dropping
 * a table takes no longer for a large one, so one transaction does it all.
 */
export async function dropIndex(connection: PostgresConnection, datasetId: string): Promise<void> {
  const tables = postgresTables(datasetId);
  await connection.write(async (query) => {
    await lockDataset(query, tables);
    // The index row first: a garbage collection of this dataset waits for it, never the other way round.
    await query('SELECT 1 FROM vector_indexes WHERE dataset_id = $1 FOR UPDATE', [tables.datasetId]);
    for (const table of allTables(tables)) await query(`DROP TABLE IF EXISTS ${table}`);
    await query('DELETE FROM vector_sets WHERE dataset_id = $1', [tables.datasetId]);
    await query('DELETE FROM vector_indexes WHERE dataset_id = $1', [tables.datasetId]);
    await query('DELETE FROM vector_calibrations WHERE dataset_id = $1', [tables.datasetId]);
  });
}

/** How many bytes the dataset's tables take, their indexes and TOAST included (pg_total_relation_size). */
export async function diskUse(connection: PostgresConnection, datasetId: string): Promise<number> {
  const tables = postgresTables(datasetId);
  const [row] = await connection.query<{ bytes: number }>(
    'SELECT coalesce(sum(pg_total_relation_size(to_regclass(name))), 0) AS bytes FROM json_array_elements_text($1::text::json) AS name',
    [jsonRows(allTables(tables))],
  );
  return Number(row?.bytes ?? 0);
}

/** Whether the dataset's vectors have a table (pgvector was there when the dataset last started). */
async function hasVectorTable(query: Query, tables: PostgresTables): Promise<boolean> {
  const [row] = await query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [tables.embeddings]);
  return row?.present === true;
}

async function hasColumn(query: Query, table: string, column: string): Promise<boolean> {
  const [row] = await query<{ present: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped) AS present',
    [table, column],
  );
  return row?.present === true;
}

/** Creating or dropping a dataset's tables, one replica at a time (until the transaction ends). */
async function lockDataset(query: Query, tables: PostgresTables): Promise<void> {
  await query("SELECT pg_advisory_xact_lock(hashtext('knode vector index ' || $1))", [tables.datasetId]);
}
