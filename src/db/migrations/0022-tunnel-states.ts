import { type Kysely, sql } from 'kysely';

/**
 * What the replica running a tenant's tunnel shares of it (cluster mode, issue 26: coordination/tunnel-leases.ts),
 * so that GET /settings/proxy answers the truth on every replica: `holder` (its lease holder id), `state`
 * (`online` or `reconnecting`), the public URL while online, `retry_at` (epoch milliseconds, the holder's clock)
 * and `error` while reconnecting. One row per tenant while its tunnel runs, written under the tunnel's lease,
 * deleted when it stops. A single node never reads it (its tunnel runs in its own process). Plain SQL: the
 * same table on PostgreSQL (its migration 0010).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tunnel_states (
      tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
      holder TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('online', 'reconnecting')),
      public_url TEXT,
      retry_at INTEGER,
      error TEXT,
      updated_at TEXT NOT NULL
    )`.execute(db);
}
