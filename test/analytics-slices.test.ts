import { describe, expect, test } from 'bun:test';
import type { Key, Window } from '../src/analytics/repository.ts';
import { readSliced } from '../src/analytics/sliced-reading.ts';

/** readSliced over rows in memory: what each statement would read, and what the answer says it read. */
function source(count: number) {
  // Newest first: row i has time count - i; two rows share each time, as rows of one instant do.
  const keys: Key[] = Array.from({ length: count }, (_, i) => ({
    at: String(100_000 + Math.floor((count - i) / 2)).padStart(7, '0'),
    id: count - i,
  }));
  const below = (key: Key, upper: Key | undefined) => !upper || key.at < upper.at || (key.at === upper.at && key.id < upper.id);
  const within = (key: Key, window: Window) => below(key, window.upper) && (!window.lower || !below(key, window.lower));
  const slices: number[] = [];
  const seen = new Set<number>();
  return {
    slices,
    seen,
    async boundary(upper: Key | undefined, rows: number) {
      return keys.filter((key) => below(key, upper))[rows - 1];
    },
    async read(window: Window) {
      const rows = keys.filter((key) => within(key, window));
      for (const row of rows) {
        expect(seen.has(row.id)).toBe(false);
        seen.add(row.id);
      }
      slices.push(rows.length);
      return rows.length;
    },
  };
}

describe('reading a range in slices', () => {
  test('every row once, newest first, no statement reading more than a slice', async () => {
    const rows = source(1_003);
    expect(await readSliced(rows, 100, 10_000)).toEqual({ rows: 1_003, capped: false, oldest: undefined });
    expect(rows.slices).toEqual([...Array(10).fill(100), 3]);
    expect(rows.seen.size).toBe(1_003);
  });

  test('stops at the cap and says from when it counted; exactly the cap left is not capped', async () => {
    const rows = source(1_000);
    const reading = await readSliced(rows, 100, 500);
    expect(reading).toMatchObject({ rows: 500, capped: true });
    expect(reading.oldest).toBe(String(100_000 + Math.floor(500 / 2)).padStart(7, '0'));
    expect(await readSliced(source(500), 100, 500)).toEqual({ rows: 500, capped: false, oldest: undefined });
    expect(await readSliced(source(0), 100, 500)).toEqual({ rows: 0, capped: false, oldest: undefined });
  });

  test('lets the event loop turn between slices', async () => {
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    const rows = source(2_000);
    const slow = {
      boundary: rows.boundary,
      async read(window: Window) {
        const started = performance.now();
        while (performance.now() - started < 3) {} // a synchronous statement's time
        return rows.read(window);
      },
    };
    await readSliced(slow, 100, 10_000);
    clearInterval(ticking);
    expect(turns).toBeGreaterThanOrEqual(10);
  });
});
