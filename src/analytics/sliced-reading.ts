import { nextTurn } from '../util/next-turn.ts';
import type { Key, Window } from './repository.ts';

/** How much of a range an answer read. */
export interface Reading {
  /** Rows read (usage rows; for the terms, term rows). */
  rows: number;
  /** More rows of the range were left unread: those older than `oldest`. */
  capped: boolean;
  /** The oldest row read when capped (its time), else undefined. */
  oldest: string | undefined;
}

export interface SlicedSource {
  /** The key of the `rows`-th newest row below `upper`, undefined when fewer remain. */
  boundary(upper: Key | undefined, rows: number): Promise<Key | undefined>;
  /** Counts one slice, and says how many rows it held. */
  read(window: Window): Promise<number>;
}

/**
 * Reads a range newest first, `sliceRows` rows a statement, until it is read or `maxRows` were: each
 * statement holds the event loop (bun:sqlite is synchronous) for one slice only, and the loop polls its
 * sockets between slices, so a request for a busy year never holds other requests back for long.
 */
export async function readSliced(source: SlicedSource, sliceRows: number, maxRows: number): Promise<Reading> {
  let upper: Key | undefined;
  let rows = 0;
  for (;;) {
    const lower = await source.boundary(upper, sliceRows);
    rows += await source.read({ ...(lower ? { lower } : {}), ...(upper ? { upper } : {}) });
    if (!lower) return { rows, capped: false, oldest: undefined };
    if (rows >= maxRows) {
      const more = await source.boundary(lower, 1);
      return more ? { rows, capped: true, oldest: lower.at } : { rows, capped: false, oldest: undefined };
    }
    upper = lower;
    await nextTurn();
  }
}
