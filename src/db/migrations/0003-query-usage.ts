import { type Kysely, sql } from 'kysely';

/** Every answered query, for `GET /endpoints/{slug}/usage` and the owner's accounting. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE query_usage (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      sender_email TEXT NOT NULL,
      dataset_cost REAL NOT NULL DEFAULT 0,
      model_cost REAL NOT NULL DEFAULT 0,
      total_cost REAL NOT NULL DEFAULT 0,
      tokens INTEGER NOT NULL DEFAULT 0,
      status TEXT NOT NULL CHECK (status IN ('success', 'error')),
      error TEXT,
      created_at TEXT NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX query_usage_endpoint ON query_usage(endpoint_id, id)`.execute(db);
}
