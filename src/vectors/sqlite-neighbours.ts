import { aroundRow, checkRadius } from './chunk-neighbours.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import type { ChunkNeighbours } from './store.ts';
import { datasetTables } from './tables.ts';

/**
 * The chunks around chunks of a file in the SQLite store. A file's visible chunks are one set of consecutive
 * row ids in file order (chunk-sets.ts), so a chunk's neighbours are the rows beside its own, kept inside its
 * set: a staged or garbage set's rows are never read, and a chunk whose set is not visible has no entry.
 * One read of the connection: every chunk's neighbours come from the same state.
 */
export async function neighbours(
  connection: StoreConnection,
  datasetId: string,
  chunkIds: readonly string[],
  radius: number,
): Promise<Map<string, ChunkNeighbours>> {
  checkRadius(radius);
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => {
    requireIndex(sqlite, tables);
    const found = new Map<string, ChunkNeighbours>();
    const chunkRow = sqlite.query('SELECT row_id AS rowid, file_key AS fileKey FROM vector_chunks WHERE id = ? AND dataset_id = ?');
    const visibleSetOf = sqlite.query(
      "SELECT first_row AS first, last_row AS last FROM vector_sets WHERE dataset_id = ? AND file_key = ? AND state = 'visible' AND ? BETWEEN first_row AND last_row",
    );
    const rowsBetween = sqlite.query('SELECT row_id AS rowid, id, content FROM vector_chunks WHERE row_id BETWEEN ? AND ? ORDER BY row_id');
    for (const id of new Set(chunkIds)) {
      const chunk = chunkRow.get(id, tables.datasetId) as { rowid: number; fileKey: string } | null;
      if (!chunk) continue;
      const set = visibleSetOf.get(tables.datasetId, chunk.fileKey, chunk.rowid) as { first: number; last: number } | null;
      if (!set) continue;
      const from = Math.max(set.first, chunk.rowid - radius);
      const to = Math.min(set.last, chunk.rowid + radius);
      const rows = rowsBetween.all(from, to) as { rowid: number; id: string; content: string }[];
      found.set(id, aroundRow(rows, chunk.rowid));
    }
    return found;
  });
}
