import { type Kysely, sql } from 'kysely';

/**
 * SQLite's migration 0020 (which says what the column is): the replica that made each settlement journal row.
 * Frozen once released: add a new file rather than editing this one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE payment_settlements ADD COLUMN replica TEXT`.execute(db);
}
