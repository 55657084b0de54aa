import type { Database as SqliteDatabase } from 'bun:sqlite';
import { type DatasetTables, hasBitColumn } from './tables.ts';

/**
 * How vector candidates are found. `exact` scans every float vector. `quantized` scans the 1-bit-per-
 * dimension copies (32x fewer bytes) for 16 x limit candidates and re-scores those with the float
 * vectors. `auto` is exact up to 20,000 chunks and quantized above, where the exact scan alone takes
 * about the whole latency budget (68 ms for 100k x 512 on two cores, measured).
 */
export type VectorScan = 'auto' | 'exact' | 'quantized';

export interface Neighbour {
  readonly rowid: number;
  /** Cosine distance, from the float vectors whatever the scan. */
  readonly distance: number;
}

const EXACT_SCAN_MAX_CHUNKS = 20_000;
/** Measured on clustered 512-d data at 100k: 16x gives recall@10 0.98 against the exact scan, 8x 0.86, 4x 0.65. */
const QUANTIZED_OVERSAMPLE = 16;
/** sqlite-vec refuses a larger k. */
export const MAX_KNN = 4096;

/** The `wanted` chunks nearest to `query` (a float32 blob), nearest first. */
export function nearestChunks(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  index: { readonly dimension: number; readonly chunkCount: number },
  query: Uint8Array,
  wanted: number,
  limit: number,
  scan: VectorScan = 'auto',
): Neighbour[] {
  const k = Math.min(MAX_KNN, wanted, index.chunkCount);
  if (k < 1) return [];
  const quantized =
    hasBitColumn(index.dimension) && (scan === 'quantized' || (scan === 'auto' && index.chunkCount > EXACT_SCAN_MAX_CHUNKS));
  if (!quantized) {
    const rows = sqlite
      .query(`SELECT rowid, distance FROM ${tables.vectors} WHERE embedding MATCH ? AND k = ?`)
      .all(query, k) as Neighbour[];
    return rows.sort((a, b) => a.distance - b.distance);
  }
  // sqlite-vec's top-k selection costs grow with k (about 0.15 ms per unit of k at 100k chunks), so the
  // oversampling is tied to the number of results asked for rather than to the candidate count.
  const bitK = Math.min(MAX_KNN, Math.max(k, limit * QUANTIZED_OVERSAMPLE));
  const candidates = sqlite
    .query(`SELECT rowid FROM ${tables.vectors} WHERE embedding_bits MATCH vec_quantize_binary(?) AND k = ?`)
    .all(query, bitK) as { rowid: number }[];
  const rescored: Neighbour[] = [];
  for (const { rowid } of candidates) {
    const distance = distanceTo(sqlite, tables, query, rowid);
    if (distance !== undefined) rescored.push({ rowid, distance });
  }
  return rescored.sort((a, b) => a.distance - b.distance).slice(0, k);
}

/**
 * Cosine distance from the query to one stored chunk, by rowid. About 20 µs with the database
 * memory-mapped; without mmap, SQLite walks the 2 MB chunk blob's overflow pages and it takes ~0.4 ms.
 */
export function distanceTo(sqlite: SqliteDatabase, tables: DatasetTables, query: Uint8Array, rowid: number): number | undefined {
  const row = sqlite
    .query(`SELECT vec_distance_cosine(embedding, ?) AS distance FROM ${tables.vectors} WHERE rowid = ?`)
    .get(query, rowid) as { distance: number } | null;
  return row?.distance;
}
