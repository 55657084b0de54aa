import { type Kysely, sql } from 'kysely';

/**
 * Paid queries (API-CONTRACT 10.3):
 * - `payment_wallets`: a tenant's receiving address on Tempo (testnet or mainnet), the RPC it is checked
 *   with, and the secret its challenges are signed with (sealed with the SecretBox, never shown);
 * - `payment_consumed`: challenge ids and transaction hashes already paid with, kept until they expire
 *   (and mppx's own replay marks), so a restart cannot make a credential usable twice;
 * - `policies` take the type `mpp`, and `query_usage` what a query was charged (rail, amount, transaction)
 *   and a status for queries a payment policy refused; SQLite cannot change a CHECK in place, so both
 *   tables are rebuilt (rowids kept: they order policies created in the same millisecond).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE payment_wallets (
      tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
      wallet_address TEXT NOT NULL,
      testnet INTEGER NOT NULL CHECK (testnet IN (0, 1)),
      rpc_url TEXT,
      challenge_secret TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE payment_consumed (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      expires_at INTEGER
    )`.execute(db);
  await sql`CREATE INDEX payment_consumed_expiry ON payment_consumed(expires_at)`.execute(db);

  await sql`
    CREATE TABLE policies_paid (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      policy_type TEXT NOT NULL CHECK (policy_type IN ('access', 'rate_limit', 'accounting', 'mpp')),
      configuration TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    INSERT INTO policies_paid (rowid, id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at)
    SELECT rowid, id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at FROM policies`.execute(db);
  await sql`DROP TABLE policies`.execute(db);
  await sql`ALTER TABLE policies_paid RENAME TO policies`.execute(db);
  await sql`CREATE INDEX policies_endpoint ON policies(endpoint_id)`.execute(db);
  await sql`CREATE INDEX policies_tenant ON policies(tenant_id)`.execute(db);

  await sql`
    CREATE TABLE query_usage_paid (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      sender_email TEXT NOT NULL,
      dataset_cost REAL NOT NULL DEFAULT 0,
      model_cost REAL NOT NULL DEFAULT 0,
      total_cost REAL NOT NULL DEFAULT 0,
      tokens INTEGER NOT NULL DEFAULT 0,
      status TEXT NOT NULL CHECK (status IN ('success', 'error', 'refused')),
      error TEXT,
      payment_rail TEXT CHECK (payment_rail IN ('mpp', 'accounting')),
      payment_amount REAL,
      payment_transaction TEXT,
      created_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    INSERT INTO query_usage_paid (id, tenant_id, endpoint_id, sender_email, dataset_cost, model_cost, total_cost, tokens, status, error, created_at)
    SELECT id, tenant_id, endpoint_id, sender_email, dataset_cost, model_cost, total_cost, tokens, status, error, created_at FROM query_usage`.execute(
    db,
  );
  await sql`DROP TABLE query_usage`.execute(db);
  await sql`ALTER TABLE query_usage_paid RENAME TO query_usage`.execute(db);
  await sql`CREATE INDEX query_usage_endpoint ON query_usage(endpoint_id, id)`.execute(db);
}
