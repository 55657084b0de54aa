import type { VectorScan } from '../vector-search.ts';
import type { HiddenRange } from './chunk-sets.ts';
import { anyRow, jsonRows, type Query } from './connection.ts';
import type { PostgresTables } from './dataset-tables.ts';
import { hasHnswIndex, vectorLiteral, vectorType } from './pgvector.ts';

/**
 * The nearest chunks by cosine distance in pgvector (`<=>`, the distance sqlite-vec computes: scores
 * match the SQLite store's to float rounding). `exact` scans every vector; otherwise the HNSW index is
 * asked, except where an exact scan is cheap anyway (`auto` in a small dataset, so that it answers exactly
 * what the SQLite store answers) or the index cannot answer (more neighbours than its search list holds, a
 * zero query, which the cosine index cannot place, or vectors above 4,000 dimensions, which have no index).
 */

export interface Neighbour {
  readonly rowid: number;
  readonly distance: number;
}

/** Up to this many vectors `auto` scans exactly (a few milliseconds); above, the HNSW index answers. */
const EXACT_SCAN_MAX_CHUNKS = 5_000;
/** pgvector's largest hnsw.ef_search: the most neighbours one index search can return. */
const MAX_EF_SEARCH = 1000;
/** pgvector's default search list: asked for fewer neighbours, the index still looks at this many. */
const DEFAULT_EF_SEARCH = 40;

/**
 * The `wanted` visible chunks nearest to `query`, nearest first. The index holds hidden sets' vectors too:
 * it is asked for as many more as there are hidden vectors, and those are left out.
 */
export async function nearestVisible(
  query: Query,
  tables: PostgresTables,
  dimension: number,
  vectors: number,
  hidden: readonly HiddenRange[],
  target: Float32Array,
  wanted: number,
  scan: VectorScan = 'auto',
): Promise<Neighbour[]> {
  const hiddenVectors = hidden.reduce((sum, range) => sum + range.vectors, 0);
  const k = wanted + hiddenVectors;
  const literal = vectorLiteral(target);
  const type = `${vectorType(dimension)}(${dimension})`;
  const exact =
    scan === 'exact' ||
    (scan === 'auto' && vectors <= EXACT_SCAN_MAX_CHUNKS) ||
    k > MAX_EF_SEARCH ||
    !hasHnswIndex(dimension) ||
    target.every((value) => value === 0);
  if (exact) {
    // Ordered by an expression the index does not serve, so the planner scans; hidden rows are left out first.
    const outside = hidden.map((_, index) => ` AND row_id NOT BETWEEN $${3 + index * 2} AND $${4 + index * 2}`).join('');
    const rows = await query<{ row_id: number; distance: number | null }>(
      `SELECT row_id, embedding <=> $1::${type} AS distance FROM ${tables.embeddings} WHERE true${outside} ` +
        `ORDER BY (embedding <=> $1::${type}) + 0, row_id LIMIT $2`,
      [literal, wanted, ...hidden.flatMap((range) => [range.first, range.last])],
    );
    return rows.map(neighbour);
  }
  await query(`SET LOCAL hnsw.ef_search = ${Math.max(DEFAULT_EF_SEARCH, k)}`);
  const rows = await query<{ row_id: number; distance: number | null }>(
    `SELECT row_id, embedding <=> $1::${type} AS distance FROM ${tables.embeddings} ORDER BY embedding <=> $1::${type} LIMIT $2`,
    [literal, k],
  );
  return rows
    .map(neighbour)
    .filter((hit) => !hidden.some((range) => hit.rowid >= range.first && hit.rowid <= range.last))
    .slice(0, wanted);
}

/** Cosine distances from the query to chosen chunks (those without a vector are absent). */
export async function distancesTo(
  query: Query,
  tables: PostgresTables,
  dimension: number,
  target: Float32Array,
  rowids: readonly number[],
): Promise<Map<number, number>> {
  if (rowids.length === 0) return new Map();
  const type = `${vectorType(dimension)}(${dimension})`;
  const rows = await query<{ row_id: number; distance: number | null }>(
    `SELECT row_id, embedding <=> $1::${type} AS distance FROM ${tables.embeddings} ` + `WHERE row_id ${anyRow(2)}`,
    [vectorLiteral(target), jsonRows(rowids)],
  );
  return new Map(rows.map(neighbour).map((hit) => [hit.rowid, hit.distance]));
}

/**
 * A zero vector has no direction: pgvector's distance is NaN where sqlite-vec's is NULL, which the SQLite
 * store reads as 0 (a cosine of 1 for every chunk); the same here, so both give every chunk the same evidence.
 */
function neighbour(row: { row_id: number; distance: number | null }): Neighbour {
  const distance = row.distance === null ? Number.NaN : Number(row.distance);
  return { rowid: Number(row.row_id), distance: Number.isNaN(distance) ? 0 : distance };
}
