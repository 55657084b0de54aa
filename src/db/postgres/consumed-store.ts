import type { Db, DbOrTransaction } from '../database.ts';

/** Thrown inside the claiming transaction to roll back the keys it had claimed already. */
class AlreadyConsumed extends Error {}

/**
 * payments/consumed-store.ts's single-use keys (challenge ids and transaction hashes already paid with, in
 * `payment_consumed` until they expire) for a database shared by several processes: a key is claimed by one
 * upsert that writes only where no live mark is (`ON CONFLICT (key) DO UPDATE … WHERE expires_at <= now
 * RETURNING key`), so of two processes claiming the same credential at the same moment exactly one gets
 * it. The keys of one claim move together, in one transaction, in one order.
 *
 * Plain Kysely: it runs on SQLite too, where the connection lock serialises the transaction.
 */
export class PostgresConsumedStore {
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether any of the keys is consumed now. */
  async anyConsumed(keys: readonly string[]): Promise<boolean> {
    if (keys.length === 0) return false;
    const nowMs = this.now();
    const live = await this.db
      .selectFrom('payment_consumed')
      .select('key')
      .where('key', 'in', [...keys])
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', nowMs)]))
      .executeTakeFirst();
    return live !== undefined;
  }

  /**
   * Marks every key consumed until `expiresAt` (ms since the epoch), unless one of them already is: then
   * nothing is written and the answer is false.
   */
  async claim(keys: readonly string[], expiresAt: number): Promise<boolean> {
    const nowMs = this.now();
    await this.prune(nowMs);
    try {
      await this.db.transaction().execute(async (trx) => {
        if (!(await claimKeysIn(trx, keys, expiresAt, nowMs))) throw new AlreadyConsumed();
      });
      return true;
    } catch (error) {
      if (error instanceof AlreadyConsumed) return false;
      throw error;
    }
  }

  /** Forgets keys: what was claimed for a query that ended before anything was broadcast. */
  async release(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.db
      .deleteFrom('payment_consumed')
      .where('key', 'in', [...keys])
      .execute();
  }

  /** Expired keys go, at most once a minute per process. */
  private async prune(nowMs: number): Promise<void> {
    if (nowMs - this.lastPrune < 60_000) return;
    this.lastPrune = nowMs;
    await this.db.deleteFrom('payment_consumed').where('expires_at', 'is not', null).where('expires_at', '<=', nowMs).execute();
  }
}

/**
 * Inside the caller's transaction (the settlement journal claims a credential's keys and writes its row in
 * one): claims every key, or answers false at the first one that is live. On false the caller must roll
 * its transaction back, or the keys claimed before that one stay claimed.
 */
export async function claimKeysIn(trx: DbOrTransaction, keys: readonly string[], expiresAt: number, nowMs: number): Promise<boolean> {
  for (const key of [...keys].sort()) {
    const claimed = await trx
      .insertInto('payment_consumed')
      .values({ key, value: '{"claimed":true}', expires_at: expiresAt })
      .onConflict((conflict) =>
        conflict
          .column('key')
          .doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), expires_at: eb.ref('excluded.expires_at') }))
          .where('payment_consumed.expires_at', 'is not', null)
          .where('payment_consumed.expires_at', '<=', nowMs),
      )
      .returning('key')
      .executeTakeFirst();
    if (!claimed) return false;
  }
  return true;
}
