import { type Kysely, sql } from 'kysely';

/**
 * Which columns a dataset's keyword table has (vectors/tables.ts, KEYWORD_LAYOUT): the existing ones
 * index the chunk's text only (layout 1) and are rebuilt with title and file name at the dataset's next start.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE vector_indexes ADD COLUMN keyword_layout INTEGER NOT NULL DEFAULT 1`.execute(db);
}
