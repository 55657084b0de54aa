import { type Kysely, sql } from 'kysely';

/**
 * A new policy type, `pii_filter` (API-CONTRACT 10.4): `policies.policy_type` is checked by a CHECK
 * constraint, which SQLite cannot alter in place, so the table is rebuilt as 0015 rebuilt it (its procedure,
 * sqlite.org/lang_altertable.html, "other kinds of table schema changes"): foreign keys off, one transaction,
 * the new table made, the rows copied with their `seq` (their order), the old table dropped, the new one
 * renamed, its indexes made again, the foreign keys checked before committing. Nothing references
 * `policies`, but its own keys reference tenants and endpoints, and the check proves the copy kept them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const before = await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(db);
  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await sql`BEGIN IMMEDIATE`.execute(db);
    try {
      await rebuildPolicies(db);
      const broken = await sql`PRAGMA foreign_key_check`.execute(db);
      if (broken.rows.length > 0) throw new Error(`foreign keys broken by the rebuild: ${JSON.stringify(broken.rows.slice(0, 5))}`);
      await sql`COMMIT`.execute(db);
    } catch (error) {
      await sql`ROLLBACK`.execute(db);
      throw error;
    }
  } finally {
    if (before.rows[0]?.foreign_keys) await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}

async function rebuildPolicies(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE policies_new (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      policy_type TEXT NOT NULL CHECK (policy_type IN ('access', 'rate_limit', 'accounting', 'mpp', 'pii_filter')),
      configuration TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    INSERT INTO policies_new (seq, id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at)
    SELECT seq, id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at FROM policies`.execute(db);
  await sql`DROP TABLE policies`.execute(db);
  await sql`ALTER TABLE policies_new RENAME TO policies`.execute(db);
  await sql`CREATE INDEX policies_endpoint ON policies(endpoint_id)`.execute(db);
  await sql`CREATE INDEX policies_tenant ON policies(tenant_id)`.execute(db);
}
