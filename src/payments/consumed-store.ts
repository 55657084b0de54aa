import { type Db, type DbOrTransaction, inTransaction } from '../db/database.ts';
import { type Clock, systemClock } from '../util/clock.ts';

/** Thrown inside the claiming transaction to roll back the keys it had claimed already. */
class AlreadyConsumed extends Error {}

/**
 * What has been paid with, in the database so that a restart forgets nothing (API-CONTRACT 10.3): challenge
 * ids and transaction hashes, each kept until its challenge expires (a credential is worthless after that).
 *
 * A key is claimed by one upsert that writes only where no live mark is (`ON CONFLICT (key) DO UPDATE …
 * WHERE expires_at <= now RETURNING key`): on SQLite the one connection runs one claim at a time, and on
 * PostgreSQL, where several replicas claim at once, the second of two claims of one key waits for the
 * first one's row lock and then finds the key live, so exactly one wins either way. The keys of one claim
 * move together, in one transaction, in one order (two claims sharing keys never hold each other's
 * first). The settlement journal claims its keys in the same transaction as it writes its row
 * (`claimKeysIn`, `removeKeys`).
 */
export class ConsumedStore {
  private lastPrune = 0;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Whether any of the keys is consumed now. */
  async anyConsumed(keys: readonly string[]): Promise<boolean> {
    if (keys.length === 0) return false;
    const nowMs = this.clock.now();
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
    const nowMs = this.clock.now();
    await this.prune(nowMs);
    try {
      await inTransaction(this.db, async (trx) => {
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
    await removeKeys(this.db, keys);
  }

  /** Expired keys go, at most once a minute per process. */
  private async prune(nowMs: number): Promise<void> {
    if (nowMs - this.lastPrune < 60_000) return;
    this.lastPrune = nowMs;
    await this.db.deleteFrom('payment_consumed').where('expires_at', 'is not', null).where('expires_at', '<=', nowMs).execute();
  }
}

/**
 * Inside the caller's transaction: claims every key until `expiresAt`, or answers false at the first one
 * that is live at `nowMs`. On false the caller must roll its transaction back, or the keys claimed before
 * that one stay claimed.
 */
export async function claimKeysIn(trx: DbOrTransaction, keys: readonly string[], expiresAt: number, nowMs: number): Promise<boolean> {
  for (const key of [...new Set(keys)].sort()) {
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

/** Frees keys (in the caller's transaction, when given one). */
export async function removeKeys(db: DbOrTransaction, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await db
    .deleteFrom('payment_consumed')
    .where('key', 'in', [...keys])
    .execute();
}
