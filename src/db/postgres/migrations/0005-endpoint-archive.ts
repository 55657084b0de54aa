import { type Kysely, sql } from 'kysely';

/**
 * SQLite's migration 0018 (archived endpoints, which says what each column is): when an endpoint was
 * archived, and when each marketplace took it off. Timestamps compare by their bytes (COLLATE "C") as in SQLite.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE endpoints ADD COLUMN archived_at TEXT COLLATE "C"`.execute(db);
  await sql`ALTER TABLE endpoint_marketplaces ADD COLUMN withdrawn_at TEXT COLLATE "C"`.execute(db);
}
