import { type Kysely, sql } from 'kysely';

/**
 * SQLite's migration 0017: `policies.policy_type` takes `pii_filter` too (API-CONTRACT 10.4). PostgreSQL
 * alters a CHECK in place: the column's constraint (named `policies_policy_type_check` by PostgreSQL in
 * 0001) is dropped and made again with the new list, in the migration's transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE policies DROP CONSTRAINT policies_policy_type_check`.execute(db);
  await sql`
    ALTER TABLE policies ADD CONSTRAINT policies_policy_type_check
      CHECK (policy_type IN ('access', 'rate_limit', 'accounting', 'mpp', 'pii_filter'))`.execute(db);
}
