import { aroundRow, checkRadius } from '../chunk-neighbours.ts';
import type { ChunkNeighbours } from '../store.ts';
import { requireIndex } from './chunk-sets.ts';
import { jsonRows, type PostgresConnection } from './connection.ts';
import { postgresTables } from './dataset-tables.ts';

/**
 * The chunks around chunks of a file in the PostgreSQL store, as in the SQLite store (../sqlite-neighbours.ts):
 * the rows beside a chunk's own, inside its file's visible set (a chunk whose set is not visible has no
 * entry). Two statements in one read (one snapshot): the chunks with their visible set's bounds, then every
 * row within `radius` of them.
 */
export async function neighbours(
  connection: PostgresConnection,
  datasetId: string,
  chunkIds: readonly string[],
  radius: number,
): Promise<Map<string, ChunkNeighbours>> {
  checkRadius(radius);
  const tables = postgresTables(datasetId);
  return connection.read(async (query) => {
    await requireIndex(query, tables);
    const found = new Map<string, ChunkNeighbours>();
    const ids = [...new Set(chunkIds)];
    if (ids.length === 0) return found;
    const chunks = (
      await query<{ id: string; rowid: number; first: number; last: number }>(
        `SELECT c.id, c.row_id AS rowid, s.first_row AS first, s.last_row AS last
           FROM ${tables.chunks} c
           JOIN vector_sets s ON s.dataset_id = $2 AND s.file_key = c.file_key AND s.state = 'visible'
                             AND c.row_id BETWEEN s.first_row AND s.last_row
          WHERE c.id = ANY(ARRAY(SELECT json_array_elements_text($1::text::json)))`,
        [jsonRows(ids), tables.datasetId],
      )
    ).map((row) => ({ id: row.id, rowid: Number(row.rowid), first: Number(row.first), last: Number(row.last) }));
    if (chunks.length === 0) return found;
    const ranges = chunks.map((chunk) => [Math.max(chunk.first, chunk.rowid - radius), Math.min(chunk.last, chunk.rowid + radius)]);
    const rows = (
      await query<{ rowid: number; id: string; content: string }>(
        `SELECT c.row_id AS rowid, c.id, c.content
           FROM ${tables.chunks} c
           JOIN (SELECT (r->>0)::bigint AS first, (r->>1)::bigint AS last FROM json_array_elements($1::text::json) r) ranges
             ON c.row_id BETWEEN ranges.first AND ranges.last
          ORDER BY c.row_id`,
        [jsonRows(ranges)],
      )
    ).map((row) => ({ rowid: Number(row.rowid), id: row.id, content: row.content }));
    for (const [index, chunk] of chunks.entries()) {
      const [from, to] = ranges[index] as [number, number];
      const around = rows.filter((row) => row.rowid >= from && row.rowid <= to);
      found.set(chunk.id, aroundRow(around, chunk.rowid));
    }
    return found;
  });
}
