import { type Clock, systemClock } from '../../util/clock.ts';
import { type Db, inTransaction } from '../database.ts';
import type { FixedWindows, WindowQuota, WindowVerdict } from '../fixed-windows.ts';

const KEEP_SECONDS = 2 * 86_400; // longer than the longest period (a day), as SqliteFixedWindows keeps them

/** Thrown inside the counting transaction to roll every counter of the request back. */
class UsedUp extends Error {
  constructor(readonly quota: WindowQuota) {
    super(`quota ${quota.key} used up`);
  }
}

/**
 * The fixed windows of db/fixed-windows.ts (same interface, same verdicts) for a database shared by several
 * processes, where no connection lock makes a read-then-write safe: each counter moves by one upsert that
 * counts only under its limit (`INSERT … ON CONFLICT … DO UPDATE SET count = count + 1 WHERE count < limit
 * RETURNING count`). PostgreSQL re-checks that WHERE on the newest row once it holds the row's lock, so
 * concurrent requests can never overshoot a quota, whichever process or connection they come from. All
 * quotas of one request move in one transaction, keys in one order (two requests lock shared rows in the
 * same order, never each other's first): a request refused by one quota counts against none.
 *
 * Plain Kysely: it runs on SQLite too, where the connection lock serialises the transaction.
 */
export class PostgresFixedWindows implements FixedWindows {
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Counts one hit against every quota, unless one of them is already used up. */
  async consume(quotas: readonly WindowQuota[]): Promise<WindowVerdict> {
    if (quotas.length === 0) return { allowed: true };
    const nowMs = this.clock.now();
    const windows = quotas
      .map((quota) => ({ quota, start: windowStart(quota, nowMs) }))
      .sort((a, b) => (a.quota.key === b.quota.key ? a.start - b.start : a.quota.key < b.quota.key ? -1 : 1));
    try {
      // inTransaction: should the server still pick this one as a deadlock's victim, it wrote nothing and runs again.
      await inTransaction(this.db, async (trx) => {
        for (const { quota, start } of windows) {
          if (quota.limit <= 0) throw new UsedUp(quota);
          const counted = await trx
            .insertInto('rate_windows')
            .values({ key: quota.key, window_start: start, count: 1 })
            .onConflict((conflict) =>
              conflict
                .columns(['key', 'window_start'])
                .doUpdateSet((eb) => ({ count: eb('rate_windows.count', '+', 1) }))
                .where('rate_windows.count', '<', quota.limit),
            )
            .returning('count')
            .executeTakeFirst();
          if (!counted) throw new UsedUp(quota);
        }
      });
    } catch (error) {
      if (!(error instanceof UsedUp)) throw error;
      // Which quota to name: the one whose window ends last, as SqliteFixedWindows answers.
      const verdict = await this.peekAt(quotas, nowMs);
      return verdict.allowed ? refusal(error.quota, nowMs) : verdict;
    } finally {
      await this.prune(nowMs);
    }
    return { allowed: true };
  }

  /** Whether a hit would be allowed now, without counting one. */
  peek(quotas: readonly WindowQuota[]): Promise<WindowVerdict> {
    if (quotas.length === 0) return Promise.resolve({ allowed: true });
    return this.peekAt(quotas, this.clock.now());
  }

  private async peekAt(quotas: readonly WindowQuota[], nowMs: number): Promise<WindowVerdict> {
    let verdict: WindowVerdict = { allowed: true };
    for (const quota of quotas) {
      const row = await this.db
        .selectFrom('rate_windows')
        .select('count')
        .where('key', '=', quota.key)
        .where('window_start', '=', windowStart(quota, nowMs))
        .executeTakeFirst();
      if ((row?.count ?? 0) < quota.limit) continue;
      const refused = refusal(quota, nowMs);
      if (verdict.allowed || refused.retryAfterSeconds > verdict.retryAfterSeconds) verdict = refused;
    }
    return verdict;
  }

  /** Windows older than any period go, at most once a minute per process. */
  private async prune(nowMs: number): Promise<void> {
    const nowSeconds = Math.floor(nowMs / 1000);
    if (nowSeconds - this.lastPrune < 60) return;
    this.lastPrune = nowSeconds;
    await this.db
      .deleteFrom('rate_windows')
      .where('window_start', '<', nowSeconds - KEEP_SECONDS)
      .execute();
  }
}

/** Windows are aligned to the epoch (so to UTC), in seconds. */
function windowStart(quota: WindowQuota, nowMs: number): number {
  const nowSeconds = Math.floor(nowMs / 1000);
  return nowSeconds - (nowSeconds % quota.periodSeconds);
}

function refusal(quota: WindowQuota, nowMs: number): WindowVerdict & { allowed: false } {
  return { allowed: false, quota, retryAfterSeconds: windowStart(quota, nowMs) + quota.periodSeconds - nowMs / 1000 };
}
