import { type Kysely, sql } from 'kysely';

/**
 * Which replica made each settlement journal row (issue 26): `replica` is the lease holder id of the process
 * that reserved the credential (coordination/leases.ts), so that the reconciler acts on a row only once that
 * replica is gone (on SQLite, an earlier process; in cluster mode, one whose `replica:<id>` lease lapsed or
 * was released). Null on rows written before this migration: those are judged by their age, as before.
 * Added on PostgreSQL by its migration 0007.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE payment_settlements ADD COLUMN replica TEXT`.execute(db);
}
