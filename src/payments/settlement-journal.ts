import type { Generated, Selectable } from 'kysely';
import type { Hex } from 'viem';
import { type Db, type DbOrTransaction, inTransaction } from '../db/database.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import { claimKeysIn, removeKeys } from './consumed-store.ts';

/**
 * The settlement journal (migration 0012): where each accepted MPP credential is on its way to being paid,
 * in SQLite, written before anything is broadcast, so that neither a late receipt nor a crash can lose a
 * paid answer or burn a credential that moved no money (API-CONTRACT 10.3 point 6).
 *
 *   reserved ──(answer ready)──▶ sending ──(node took it)──▶ sent ──(receipt)──▶ confirmed | failed
 *      └──(query failed, or a crash before sending)──▶ released (the credential's keys are freed)
 *
 * A row is written in the same transaction as its single-use keys are claimed (consumed-store.ts: one
 * claim of a key wins, on SQLite and across PostgreSQL replicas alike), and released in the same one as
 * they are freed: the keys and the journal never disagree.
 *
 * Each row names the replica that made it (migration 0020), so that the reconciler leaves a live replica's
 * rows alone; the moves that race with a reconciler (reserved → sending, and a release) change a row only
 * from the state its caller saw, so a reservation released meanwhile is never broadcast.
 */

export type SettlementState = 'reserved' | 'sending' | 'sent' | 'confirmed' | 'failed' | 'released';

export interface SettlementEntry {
  readonly challenge_id: string;
  readonly tenant_id: string;
  readonly endpoint_id: string;
  readonly sender_email: string;
  readonly state: SettlementState;
  /** The hash of `raw_transaction`: what the node answers and the receipt is asked by. */
  readonly transaction_hash: Hex;
  readonly raw_transaction: Hex;
  readonly payer: Hex;
  /** pathUSD base units. */
  readonly amount: bigint;
  readonly currency: Hex;
  readonly recipient: Hex;
  readonly testnet: boolean;
  readonly rpc_url: string;
  readonly consumed_keys: readonly string[];
  /** The usage row of the answer (query/ writes and reads it; opaque here), once it was ready. */
  readonly usage: Record<string, unknown> | null;
  readonly usage_written: boolean;
  readonly delivered_at: string | null;
  readonly failure: string | null;
  /** The challenge's expiry, ms since the epoch. */
  readonly expires_at: number;
  /** The lease holder id of the replica (process) that reserved it; null when made before replicas were recorded. */
  readonly replica: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export type NewSettlement = Omit<
  SettlementEntry,
  'state' | 'usage' | 'usage_written' | 'delivered_at' | 'failure' | 'replica' | 'created_at' | 'updated_at'
>;

/** Thrown when a reservation moved on before it could be sent (a reconciler released it): nothing is broadcast. */
export class SettlementMovedOn extends Error {
  constructor(readonly challengeId: string) {
    super(`the payment reservation ${challengeId} was released before its transaction could be sent`);
    this.name = 'SettlementMovedOn';
  }
}

/** The journal's table (migration 0012), known to this module only: its rows are read and written here. */
interface SettlementTable {
  challenge_id: string;
  tenant_id: string;
  endpoint_id: string;
  sender_email: string;
  state: SettlementState;
  transaction_hash: string;
  raw_transaction: string;
  payer: string;
  amount: string;
  currency: string;
  recipient: string;
  testnet: number;
  rpc_url: string;
  consumed_keys: string;
  usage: string | null;
  usage_written: Generated<number>;
  delivered_at: string | null;
  failure: string | null;
  expires_at: number;
  replica: string | null;
  created_at: string;
  updated_at: string;
}

type SettlementRow = Selectable<SettlementTable>;

/** The database with the journal's table, which db/schema.ts leaves to this module. */
type JournalDb = ReturnType<typeof withJournal>;

function withJournal(db: DbOrTransaction) {
  return db.withTables<{ payment_settlements: SettlementTable }>();
}

/** Thrown inside the reserving transaction to roll back the keys it had claimed already. */
class KeyInUse extends Error {}

export class SettlementJournal {
  private readonly db: JournalDb;

  /** `replica`: this process's lease holder id, written in every row it reserves (null: none recorded). */
  constructor(
    private readonly database: Db,
    private readonly replica: string | null = null,
    private readonly clock: Clock = systemClock,
  ) {
    this.db = withJournal(database);
  }

  /**
   * Claims the credential's single-use keys and writes its `reserved` row, at once; false (nothing written)
   * when a key is already used. A `released` row of the same challenge (a query that failed, a crash before
   * sending) is replaced: its credential is good again.
   */
  async reserve(entry: NewSettlement): Promise<boolean> {
    try {
      await inTransaction(this.database, async (transaction) => {
        if (!(await claimKeysIn(transaction, entry.consumed_keys, entry.expires_at, this.clock.now()))) throw new KeyInUse();
        const trx = withJournal(transaction);
        const time = isoNow(this.clock);
        await trx
          .deleteFrom('payment_settlements')
          .where('challenge_id', '=', entry.challenge_id)
          .where('state', '=', 'released')
          .execute();
        await trx
          .insertInto('payment_settlements')
          .values({
            challenge_id: entry.challenge_id,
            tenant_id: entry.tenant_id,
            endpoint_id: entry.endpoint_id,
            sender_email: entry.sender_email,
            state: 'reserved',
            transaction_hash: entry.transaction_hash.toLowerCase(),
            raw_transaction: entry.raw_transaction,
            payer: entry.payer,
            amount: entry.amount.toString(),
            currency: entry.currency,
            recipient: entry.recipient,
            testnet: entry.testnet ? 1 : 0,
            rpc_url: entry.rpc_url,
            consumed_keys: JSON.stringify(entry.consumed_keys),
            expires_at: entry.expires_at,
            replica: this.replica,
            created_at: time,
            updated_at: time,
          })
          .execute();
      });
      return true;
    } catch (error) {
      if (error instanceof KeyInUse) return false;
      throw error;
    }
  }

  get(challengeId: string): Promise<SettlementEntry | undefined> {
    return read(this.db, challengeId);
  }

  /**
   * Whether a transaction was ever sent or is held for a query, under any challenge: kept for good, unlike the
   * single-use keys, because a pympp memo does not name its challenge, so a transaction seen on chain could
   * otherwise be attached to a fresh challenge of the same price once the first one expired.
   */
  async transactionUsed(hash: Hex): Promise<boolean> {
    const found = await this.db
      .selectFrom('payment_settlements')
      .select('challenge_id')
      .where('transaction_hash', '=', hash.toLowerCase())
      .where('state', '!=', 'released')
      .limit(1)
      .executeTakeFirst();
    return found !== undefined;
  }

  /** The rows a restart or the reconciler must finish: not yet confirmed, failed or released. */
  async unsettled(): Promise<SettlementEntry[]> {
    const rows = await this.db
      .selectFrom('payment_settlements')
      .selectAll()
      .where('state', 'in', ['reserved', 'sending', 'sent'])
      .orderBy('created_at')
      .orderBy('challenge_id')
      .execute();
    return rows.map(toEntry);
  }

  /** The rows whose answer was paid (sent or confirmed) but whose usage row was never written. */
  async withoutUsage(): Promise<SettlementEntry[]> {
    const rows = await this.db
      .selectFrom('payment_settlements')
      .selectAll()
      .where('state', 'in', ['sent', 'confirmed'])
      .where('usage_written', '=', 0)
      .where('usage', 'is not', null)
      .execute();
    return rows.map(toEntry);
  }

  /**
   * The answer is ready and the transaction goes out now; `usage` is the row the answer will write. Only a
   * row still `reserved` moves: one a reconciler released meanwhile (its replica was taken for gone) throws
   * `SettlementMovedOn`, and its transaction must not be sent, since the credential may already pay again.
   */
  async sending(challengeId: string, usage: Record<string, unknown>): Promise<void> {
    const result = await this.db
      .updateTable('payment_settlements')
      .set({ state: 'sending', usage: JSON.stringify(usage), updated_at: isoNow(this.clock) })
      .where('challenge_id', '=', challengeId)
      .where('state', '=', 'reserved')
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) throw new SettlementMovedOn(challengeId);
  }

  sent(challengeId: string): Promise<void> {
    return this.update(challengeId, 'sent');
  }

  confirmed(challengeId: string): Promise<void> {
    return this.update(challengeId, 'confirmed');
  }

  /** The chain took the transaction but it paid nothing (reverted, dropped): the reason is kept. */
  failed(challengeId: string, reason: string): Promise<void> {
    return this.update(challengeId, 'failed', { failure: reason });
  }

  /**
   * Nothing was broadcast: the row is `released` and the credential's keys freed, at once. A row that moved on
   * meanwhile (sent, or released and reserved again by another caller) is left as it is, and so are its keys.
   */
  async release(challengeId: string): Promise<void> {
    await this.releaseFrom(challengeId, ['reserved', 'sending']);
  }

  /** `release`, only when the row is still in one of `from` (the state a reconciler saw); whether it was released. */
  releaseFrom(challengeId: string, from: readonly SettlementState[]): Promise<boolean> {
    return inTransaction(this.database, async (transaction) => {
      const trx = withJournal(transaction);
      const result = await trx
        .updateTable('payment_settlements')
        .set({ state: 'released', updated_at: isoNow(this.clock) })
        .where('challenge_id', '=', challengeId)
        .where('state', 'in', [...from])
        .returning('consumed_keys')
        .executeTakeFirst();
      if (!result) return false;
      await removeKeys(transaction, JSON.parse(result.consumed_keys) as string[]);
      return true;
    });
  }

  /** The answer was handed out: a later use of the same credential is a replay, not a retry. */
  async delivered(challengeId: string): Promise<void> {
    const time = isoNow(this.clock);
    await this.db
      .updateTable('payment_settlements')
      .set({ delivered_at: time, updated_at: time })
      .where('challenge_id', '=', challengeId)
      .execute();
  }

  private async update(challengeId: string, state: SettlementState, extra: { usage?: string; failure?: string } = {}): Promise<void> {
    await this.db
      .updateTable('payment_settlements')
      .set((eb) => ({
        state,
        usage: eb.fn.coalesce(eb.val(extra.usage ?? null), eb.ref('usage')),
        failure: eb.fn.coalesce(eb.val(extra.failure ?? null), eb.ref('failure')),
        updated_at: isoNow(this.clock),
      }))
      .where('challenge_id', '=', challengeId)
      .execute();
  }
}

async function read(db: JournalDb, challengeId: string): Promise<SettlementEntry | undefined> {
  const row = await db.selectFrom('payment_settlements').selectAll().where('challenge_id', '=', challengeId).executeTakeFirst();
  return row ? toEntry(row) : undefined;
}

function toEntry(row: SettlementRow): SettlementEntry {
  return {
    ...row,
    transaction_hash: row.transaction_hash as Hex,
    raw_transaction: row.raw_transaction as Hex,
    payer: row.payer as Hex,
    amount: BigInt(row.amount),
    currency: row.currency as Hex,
    recipient: row.recipient as Hex,
    testnet: row.testnet === 1,
    consumed_keys: JSON.parse(row.consumed_keys) as string[],
    usage: row.usage === null ? null : (JSON.parse(row.usage) as Record<string, unknown>),
    usage_written: row.usage_written === 1,
  };
}
