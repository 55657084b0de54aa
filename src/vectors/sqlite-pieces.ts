import { laterPiecesWriter, readRowsWithin } from './chunk-sets.ts';
import { VECTOR_LAYOUT } from './piece-similarity.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import type { LaterPieces, ReadLimits } from './store.ts';
import { datasetTables } from './tables.ts';

/**
 * The later pieces of chunks embedded before whole-chunk vectors, in the SQLite store (piece-similarity.ts,
 * VECTOR_LAYOUT; ingestion/piece-backfill.ts makes them): which chunks still lack them, their pieces written,
 * and the index moved to the current layout once none is left.
 */

/** Whether the dataset's index is in the current vector layout (every chunk embedded with its pieces). */
export async function piecesComplete(connection: StoreConnection, datasetId: string): Promise<boolean> {
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => requireIndex(sqlite, tables).vectorLayout >= VECTOR_LAYOUT);
}

/**
 * The dataset's visible chunks after row `after` that have their vector and no later pieces, in row order,
 * within `limits`. Chunks that fit in one piece come back too: only their text says so.
 */
export async function chunksWithoutPieces(
  connection: StoreConnection,
  datasetId: string,
  after: number,
  limits: ReadLimits,
): Promise<{ rowid: number; content: string }[]> {
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => {
    // Set by set, each a range of row ids: one query over every chunk after `after` sorted all of them at each
    // call (up to 4 ms at 20,000 chunks, growing with the dataset); this reads what it returns (at most 3 ms a
    // call at 100,000 chunks, measured).
    const sets = sqlite
      .query(
        'SELECT first_row AS first, first_row + embedded - 1 AS last FROM vector_sets ' +
          "WHERE dataset_id = ? AND state = 'visible' AND embedded > 0 AND first_row + embedded - 1 > ? ORDER BY first_row",
      )
      .all(tables.datasetId, after) as { first: number; last: number }[];
    const read = sqlite.query(
      'SELECT row_id AS rowid, content FROM vector_chunks WHERE row_id BETWEEN ? AND ? AND later_pieces IS NULL ORDER BY row_id LIMIT ?',
    );
    const rows: { rowid: number; content: string }[] = [];
    for (const set of sets) {
      if (rows.length >= limits.texts) break;
      rows.push(...(read.all(Math.max(set.first, after + 1), set.last, limits.texts - rows.length) as typeof rows));
    }
    return readRowsWithin(rows, limits.characters);
  });
}

/** Stores chunks' later pieces; a chunk gone, or with pieces already, is left as it is (a row's text never changes). */
export async function addLaterPieces(connection: StoreConnection, chunks: readonly LaterPieces[]): Promise<void> {
  await connection.write((sqlite) => {
    const save = laterPiecesWriter(sqlite);
    for (const { rowid, pieces } of chunks) save(rowid, pieces);
  });
}

/**
 * Moves the index to the current vector layout; when some chunk got pieces (`changed`), drops the dataset's own
 * calibration, fitted on its openings' cosines, so that it is fitted again (datasets/calibrator.ts).
 */
export async function finishPieces(connection: StoreConnection, datasetId: string, changed: boolean): Promise<void> {
  const tables = datasetTables(datasetId);
  await connection.write((sqlite) => {
    sqlite.query('UPDATE vector_indexes SET vector_layout = ? WHERE dataset_id = ?').run(VECTOR_LAYOUT, tables.datasetId);
    if (changed) sqlite.query('DELETE FROM vector_calibrations WHERE dataset_id = ?').run(tables.datasetId);
  });
}
