import type { Database } from 'bun:sqlite';
import { type Clock, systemClock } from '../util/clock.ts';
import type { OpenedDatabase } from './database.ts';

/** One quota: at most `limit` hits per fixed window of `periodSeconds`, aligned to the epoch (so to UTC). */
export interface WindowQuota {
  key: string;
  limit: number;
  periodSeconds: number;
}

export type WindowVerdict = { allowed: true } | { allowed: false; quota: WindowQuota; retryAfterSeconds: number };

/**
 * Fixed-window counters (rate_windows), as the rate limits, the general limits and the failed-attempt
 * limits count them. All quotas of one request move together: a request refused by one counts against
 * none, and concurrent requests never overshoot a quota. A refusal names the used-up quota whose window
 * ends last. Two implementations with the same verdicts: SqliteFixedWindows below (knode's one SQLite
 * connection), and db/postgres/fixed-windows.ts for a database several replicas share.
 */
export interface FixedWindows {
  /** Counts one hit against every quota, unless one of them is already used up. */
  consume(quotas: readonly WindowQuota[]): Promise<WindowVerdict>;
  /** Whether a hit would be allowed now, without counting one. */
  peek(quotas: readonly WindowQuota[]): Promise<WindowVerdict>;
}

const KEEP_SECONDS = 2 * 86_400; // longer than the longest period (a day)

/**
 * Counters in SQLite, so a restart does not reset a window. All quotas of one request are checked and
 * counted in one synchronous transaction: either every counter moves or none does, and since bun:sqlite
 * runs it without yielding, concurrent requests can never overshoot a quota. (PostgresFixedWindows' upsert
 * form runs on SQLite too, but took 3 times as long per request here: 115-170 µs against 37-45 µs.)
 */
export class SqliteFixedWindows implements FixedWindows {
  private lastPrune = 0;

  constructor(
    private readonly database: OpenedDatabase,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Counts one hit against every quota, unless one of them is already used up. */
  consume(quotas: readonly WindowQuota[]): Promise<WindowVerdict> {
    if (quotas.length === 0) return Promise.resolve({ allowed: true });
    const nowMs = this.clock.now();
    return this.database.exclusive((sqlite) => this.consumeNow(sqlite, quotas, nowMs, true));
  }

  /** Whether a hit would be allowed now, without counting one. */
  peek(quotas: readonly WindowQuota[]): Promise<WindowVerdict> {
    if (quotas.length === 0) return Promise.resolve({ allowed: true });
    const nowMs = this.clock.now();
    return this.database.exclusive((sqlite) => this.consumeNow(sqlite, quotas, nowMs, false));
  }

  private consumeNow(sqlite: Database, quotas: readonly WindowQuota[], nowMs: number, count: boolean): WindowVerdict {
    const read = sqlite.query<{ count: number }, [string, number]>('SELECT count FROM rate_windows WHERE key = ? AND window_start = ?');
    const bump = sqlite.query<unknown, [string, number]>(
      'INSERT INTO rate_windows (key, window_start, count) VALUES (?, ?, 1) ' +
        'ON CONFLICT (key, window_start) DO UPDATE SET count = count + 1',
    );
    const nowSeconds = Math.floor(nowMs / 1000);
    const verdict = sqlite
      .transaction((): WindowVerdict => {
        const refusal = longestRefusal(quotas, nowMs, (quota, start) => read.get(quota.key, start)?.count ?? 0);
        if (!refusal.allowed || !count) return refusal;
        for (const quota of quotas) {
          bump.run(quota.key, nowSeconds - (nowSeconds % quota.periodSeconds));
        }
        return refusal;
      })
      .immediate();
    if (nowSeconds - this.lastPrune >= 60) {
      this.lastPrune = nowSeconds;
      sqlite.query('DELETE FROM rate_windows WHERE window_start < ?').run(nowSeconds - KEEP_SECONDS);
    }
    return verdict;
  }
}

/** Of the quotas already used up in their current window, the one whose window ends last (allowed when none is). */
function longestRefusal(
  quotas: readonly WindowQuota[],
  nowMs: number,
  usedIn: (quota: WindowQuota, windowStart: number) => number,
): WindowVerdict {
  const nowSeconds = Math.floor(nowMs / 1000);
  let refusal: WindowVerdict = { allowed: true };
  for (const quota of quotas) {
    const start = nowSeconds - (nowSeconds % quota.periodSeconds);
    if (usedIn(quota, start) < quota.limit) continue;
    const retryAfterSeconds = start + quota.periodSeconds - nowMs / 1000;
    if (refusal.allowed || retryAfterSeconds > refusal.retryAfterSeconds) {
      refusal = { allowed: false, quota, retryAfterSeconds };
    }
  }
  return refusal;
}
