import { type Kysely, sql } from 'kysely';

/**
 * Archived endpoints (issue 27, item 7; API-CONTRACT 4, "Archive"):
 * - `endpoints.archived_at`: when the owner archived the endpoint; null while it is not archived. An archived
 *   endpoint keeps its policies, usage and marketplace links, is off every marketplace and answers no query.
 * - `endpoint_marketplaces.withdrawn_at`: when the marketplace took the archived endpoint off its listing;
 *   null while the marketplace lists it (or should). The link itself stays, so that unarchiving publishes the
 *   endpoint there again. A link whose `withdrawn_at` disagrees with its endpoint's `archived_at` (archived but
 *   not yet withdrawn, or unarchived but not yet published again) is one the background retries
 *   (publishing/archive-settlement.ts).
 * Plain nullable columns added in place: the same SQL on PostgreSQL (its migration 0005).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE endpoints ADD COLUMN archived_at TEXT`.execute(db);
  await sql`ALTER TABLE endpoint_marketplaces ADD COLUMN withdrawn_at TEXT`.execute(db);
}
