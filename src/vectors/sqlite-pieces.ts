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
  return connection.read((sqlite) => {
    requireIndex(sqlite, tables);
    const row = sqlite.query('SELECT vector_layout AS layout FROM vector_indexes WHERE dataset_id = ?').get(tables.datasetId) as {
      layout: number;
    };
    return row.layout >= VECTOR_LAYOUT;
  });
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
    const rows = sqlite
      .query(
        'SELECT c.row_id AS rowid, c.content FROM vector_sets s JOIN vector_chunks c ON c.row_id BETWEEN s.first_row AND s.first_row + s.embedded - 1 ' +
          "WHERE s.dataset_id = ? AND s.state = 'visible' AND c.row_id > ? AND c.later_pieces IS NULL ORDER BY c.row_id LIMIT ?",
      )
      .all(tables.datasetId, after, limits.texts) as { rowid: number; content: string }[];
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
