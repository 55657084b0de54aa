import type { ChunkNeighbours, NeighbourChunk } from './store.ts';

/**
 * What both stores' `neighbours` share (sqlite-neighbours.ts, postgres/neighbours.ts): a file's visible
 * chunks are consecutive row ids in file order, so a chunk's neighbours are the rows beside its own.
 */

/** A chunk's neighbours from the rows around it (its own among them), in row order. */
export function aroundRow(rows: readonly { rowid: number; id: string; content: string }[], rowid: number): ChunkNeighbours {
  const chunk = (row: { id: string; content: string }): NeighbourChunk => ({ id: row.id, content: row.content });
  return {
    before: rows.filter((row) => row.rowid < rowid).map(chunk),
    after: rows.filter((row) => row.rowid > rowid).map(chunk),
  };
}

export function checkRadius(radius: number): void {
  if (!Number.isInteger(radius) || radius < 0) throw new RangeError(`neighbour radius must be an integer >= 0, got ${radius}`);
}
