import { type Kysely, sql } from 'kysely';

/**
 * The settlement journal of MPP payments (API-CONTRACT 10.3 point 6, issue 21): one row per accepted
 * credential, written before its transaction is broadcast, so that a paid answer is never lost and a
 * credential that moved no money is never burnt, whatever stops the process.
 * - `state`: `reserved` (checked and held for a query that is running), `sending` (the answer is ready,
 *   the transaction is going to the node), `sent` (the node answered with its hash: money may move),
 *   `confirmed` (a receipt with the transfer), `failed` (the chain refused it after it was sent: reverted,
 *   dropped), `released` (nothing was broadcast; the credential is good again).
 * - `raw_transaction`: the signed transaction as broadcast, so that a restart can ask the chain about it
 *   (or send it again: the same bytes can only ever be mined once).
 * - `usage`: the usage row the answer would write (JSON, written at `sending`), for a process that died
 *   before writing it; `usage_written` says whether it is in `query_usage`; `delivered_at` whether the
 *   answer was handed out (a retry of an answer that was not gets it again without paying again).
 * - `consumed_keys`: the single-use keys of `payment_consumed` this credential holds, freed on release.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE payment_settlements (
      challenge_id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL,
      sender_email TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('reserved', 'sending', 'sent', 'confirmed', 'failed', 'released')),
      transaction_hash TEXT NOT NULL,
      raw_transaction TEXT NOT NULL,
      payer TEXT NOT NULL,
      amount TEXT NOT NULL,
      currency TEXT NOT NULL,
      recipient TEXT NOT NULL,
      testnet INTEGER NOT NULL CHECK (testnet IN (0, 1)),
      rpc_url TEXT NOT NULL,
      consumed_keys TEXT NOT NULL,
      usage TEXT,
      usage_written INTEGER NOT NULL DEFAULT 0 CHECK (usage_written IN (0, 1)),
      delivered_at TEXT,
      failure TEXT,
      expires_at INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`.execute(db);
  // Start-up and the reconciler look for the rows still on their way.
  await sql`CREATE INDEX payment_settlements_state ON payment_settlements(state)`.execute(db);
  await sql`CREATE INDEX payment_settlements_transaction ON payment_settlements(transaction_hash)`.execute(db);
}
