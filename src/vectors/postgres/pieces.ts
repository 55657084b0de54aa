import { readRowsWithin } from '../chunk-sets.ts';
import { VECTOR_LAYOUT } from '../piece-similarity.ts';
import type { LaterPieces, ReadLimits } from '../store.ts';
import { requireIndex, saveLaterPieces } from './chunk-sets.ts';
import type { PostgresConnection } from './connection.ts';
import { postgresTables } from './dataset-tables.ts';

/**
 * The later pieces of chunks embedded before whole-chunk vectors, in the PostgreSQL store, as in the SQLite
 * store (../sqlite-pieces.ts): which chunks still lack them, their pieces written, and the index moved to the
 * current layout once none is left.
 */

export async function piecesComplete(connection: PostgresConnection, datasetId: string): Promise<boolean> {
  const tables = postgresTables(datasetId);
  return connection.read(async (query) => {
    await requireIndex(query, tables);
    const [row] = await query<{ layout: number }>('SELECT vector_layout AS layout FROM vector_indexes WHERE dataset_id = $1', [
      tables.datasetId,
    ]);
    return Number(row?.layout ?? 0) >= VECTOR_LAYOUT;
  });
}

export async function chunksWithoutPieces(
  connection: PostgresConnection,
  datasetId: string,
  after: number,
  limits: ReadLimits,
): Promise<{ rowid: number; content: string }[]> {
  const tables = postgresTables(datasetId);
  const rows = await connection.read((query) =>
    query<{ rowid: number; content: string }>(
      `SELECT c.row_id AS rowid, c.content FROM vector_sets s JOIN ${tables.chunks} c ` +
        'ON c.row_id BETWEEN s.first_row AND s.first_row + s.embedded - 1 ' +
        "WHERE s.dataset_id = $1 AND s.state = 'visible' AND c.row_id > $2 AND c.later_pieces IS NULL ORDER BY c.row_id LIMIT $3",
      [tables.datasetId, after, limits.texts],
    ),
  );
  return readRowsWithin(
    rows.map((row) => ({ rowid: Number(row.rowid), content: row.content })),
    limits.characters,
  );
}

export async function addLaterPieces(connection: PostgresConnection, datasetId: string, chunks: readonly LaterPieces[]): Promise<void> {
  if (chunks.length === 0) return;
  const tables = postgresTables(datasetId);
  await connection.write((query) =>
    saveLaterPieces(
      query,
      tables,
      chunks.map(({ rowid, pieces }) => ({ rowid, later: pieces })),
    ),
  );
}

export async function finishPieces(connection: PostgresConnection, datasetId: string, changed: boolean): Promise<void> {
  const tables = postgresTables(datasetId);
  await connection.write(async (query) => {
    await query('UPDATE vector_indexes SET vector_layout = $1 WHERE dataset_id = $2', [VECTOR_LAYOUT, tables.datasetId]);
    if (changed) await query('DELETE FROM vector_calibrations WHERE dataset_id = $1', [tables.datasetId]);
  });
}
