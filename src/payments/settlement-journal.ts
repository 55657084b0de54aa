import type { Database } from 'bun:sqlite';
import type { Hex } from 'viem';
import type { OpenedDatabase } from '../db/database.ts';
import { claimKeys, removeKeys } from './consumed-store.ts';

/**
 * The settlement journal (migration 0012): where each accepted MPP credential is on its way to being paid,
 * in SQLite, written before anything is broadcast, so that neither a late receipt nor a crash can lose a
 * paid answer or burn a credential that moved no money (API-CONTRACT 10.3 point 6).
 *
 *   reserved ──(answer ready)──▶ sending ──(node took it)──▶ sent ──(receipt)──▶ confirmed | failed
 *      └──(query failed, or a crash before sending)──▶ released (the credential's keys are freed)
 *
 * A row is written in the same SQLite transaction as its single-use keys are claimed, and released in the
 * same one as they are freed: the keys and the journal never disagree. Every call is one synchronous
 * bun:sqlite transaction on the one connection.
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
  readonly created_at: string;
  readonly updated_at: string;
}

export type NewSettlement = Omit<
  SettlementEntry,
  'state' | 'usage' | 'usage_written' | 'delivered_at' | 'failure' | 'created_at' | 'updated_at'
>;

interface SettlementRow {
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
  usage_written: number;
  delivered_at: string | null;
  failure: string | null;
  expires_at: number;
  created_at: string;
  updated_at: string;
}

export class SettlementJournal {
  constructor(private readonly database: OpenedDatabase) {}

  /**
   * Claims the credential's single-use keys and writes its `reserved` row, at once; false (nothing written)
   * when a key is already used. A `released` row of the same challenge (a query that failed, a crash before
   * sending) is replaced: its credential is good again.
   */
  reserve(entry: NewSettlement): Promise<boolean> {
    return this.database.exclusive((sqlite) =>
      sqlite
        .transaction(() => {
          if (!claimKeys(sqlite, entry.consumed_keys, entry.expires_at)) return false;
          const time = new Date().toISOString();
          sqlite.query('DELETE FROM payment_settlements WHERE challenge_id = ? AND state = ?').run(entry.challenge_id, 'released');
          sqlite
            .query(
              `INSERT INTO payment_settlements (challenge_id, tenant_id, endpoint_id, sender_email, state, transaction_hash,
                 raw_transaction, payer, amount, currency, recipient, testnet, rpc_url, consumed_keys, expires_at, created_at, updated_at)
               VALUES (?, ?, ?, ?, 'reserved', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            )
            .run(
              entry.challenge_id,
              entry.tenant_id,
              entry.endpoint_id,
              entry.sender_email,
              entry.transaction_hash.toLowerCase(),
              entry.raw_transaction,
              entry.payer,
              entry.amount.toString(),
              entry.currency,
              entry.recipient,
              entry.testnet ? 1 : 0,
              entry.rpc_url,
              JSON.stringify(entry.consumed_keys),
              entry.expires_at,
              time,
              time,
            );
          return true;
        })
        .immediate(),
    );
  }

  get(challengeId: string): Promise<SettlementEntry | undefined> {
    return this.database.exclusive((sqlite) => read(sqlite, challengeId));
  }

  /**
   * Whether a transaction was ever sent or is held for a query, under any challenge: kept for good, unlike the
   * single-use keys, because a pympp memo does not name its challenge, so a transaction seen on chain could
   * otherwise be attached to a fresh challenge of the same price once the first one expired.
   */
  transactionUsed(hash: Hex): Promise<boolean> {
    return this.database.exclusive(
      (sqlite) =>
        sqlite
          .query<{ found: number }, [string]>(
            "SELECT 1 AS found FROM payment_settlements WHERE transaction_hash = ? AND state != 'released' LIMIT 1",
          )
          .get(hash.toLowerCase()) !== null,
    );
  }

  /** The rows a restart or the reconciler must finish: not yet confirmed, failed or released. */
  unsettled(): Promise<SettlementEntry[]> {
    return this.database.exclusive((sqlite) =>
      sqlite
        .query<SettlementRow, []>(
          "SELECT * FROM payment_settlements WHERE state IN ('reserved', 'sending', 'sent') ORDER BY created_at, challenge_id",
        )
        .all()
        .map(toEntry),
    );
  }

  /** The rows whose answer was paid (sent or confirmed) but whose usage row was never written. */
  withoutUsage(): Promise<SettlementEntry[]> {
    return this.database.exclusive((sqlite) =>
      sqlite
        .query<SettlementRow, []>(
          "SELECT * FROM payment_settlements WHERE state IN ('sent', 'confirmed') AND usage_written = 0 AND usage IS NOT NULL",
        )
        .all()
        .map(toEntry),
    );
  }

  /** The answer is ready and the transaction goes out now; `usage` is the row the answer will write. */
  sending(challengeId: string, usage: Record<string, unknown>): Promise<void> {
    return this.update(challengeId, 'sending', { usage: JSON.stringify(usage) });
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

  /** Nothing was broadcast: the row is `released` and the credential's keys freed, at once. */
  release(challengeId: string): Promise<void> {
    return this.database.exclusive((sqlite) =>
      sqlite
        .transaction(() => {
          const entry = read(sqlite, challengeId);
          if (!entry) return;
          removeKeys(sqlite, entry.consumed_keys);
          sqlite
            .query('UPDATE payment_settlements SET state = ?, updated_at = ? WHERE challenge_id = ?')
            .run('released', new Date().toISOString(), challengeId);
        })
        .immediate(),
    );
  }

  /** The answer was handed out: a later use of the same credential is a replay, not a retry. */
  delivered(challengeId: string): Promise<void> {
    return this.database.exclusive((sqlite) => {
      const time = new Date().toISOString();
      sqlite.query('UPDATE payment_settlements SET delivered_at = ?, updated_at = ? WHERE challenge_id = ?').run(time, time, challengeId);
    });
  }

  private update(challengeId: string, state: SettlementState, extra: { usage?: string; failure?: string } = {}): Promise<void> {
    return this.database.exclusive((sqlite) => {
      sqlite
        .query(
          'UPDATE payment_settlements SET state = ?, usage = coalesce(?, usage), failure = coalesce(?, failure), updated_at = ? WHERE challenge_id = ?',
        )
        .run(state, extra.usage ?? null, extra.failure ?? null, new Date().toISOString(), challengeId);
    });
  }
}

function read(sqlite: Database, challengeId: string): SettlementEntry | undefined {
  const row = sqlite.query<SettlementRow, [string]>('SELECT * FROM payment_settlements WHERE challenge_id = ?').get(challengeId);
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
