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
  return connection.read(async (query) => (await requireIndex(query, tables)).vectorLayout >= VECTOR_LAYOUT);
}

export async function chunksWithoutPieces(
  connection: PostgresConnection,
  datasetId: string,
  after: number,
  limits: ReadLimits,
): Promise<{ rowid: number; content: string }[]> {
  const tables = postgresTables(datasetId);
  // Set by set, each a range of row ids, as in the SQLite store: each call reads what it returns.
  const rows = await connection.read(async (query) => {
    const sets = await query<{ first: number; last: number }>(
      'SELECT first_row AS first, first_row + embedded - 1 AS last FROM vector_sets ' +
        "WHERE dataset_id = $1 AND state = 'visible' AND embedded > 0 AND first_row + embedded - 1 > $2 ORDER BY first_row",
      [tables.datasetId, after],
    );
    const found: { rowid: number; content: string }[] = [];
    for (const set of sets) {
      if (found.length >= limits.texts) break;
      const read = await query<{ rowid: number; content: string }>(
        `SELECT row_id AS rowid, content FROM ${tables.chunks} WHERE row_id BETWEEN $1 AND $2 AND later_pieces IS NULL ORDER BY row_id LIMIT $3`,
        [Math.max(Number(set.first), after + 1), Number(set.last), limits.texts - found.length],
      );
      for (const row of read) found.push({ rowid: Number(row.rowid), content: row.content });
    }
    return found;
  });
  return readRowsWithin(rows, limits.characters);
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
