import { type Kysely, sql } from 'kysely';

/** SQLite's migration 0022 (what the replica running a tenant's tunnel shares of it, which says what each column is). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tunnel_states (
      tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
      holder TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('online', 'reconnecting')),
      public_url TEXT,
      retry_at BIGINT,
      error TEXT,
      updated_at TEXT COLLATE "C" NOT NULL
    )`.execute(db);
}
