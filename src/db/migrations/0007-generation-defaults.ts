import { type Kysely, sql } from 'kysely';

/** An endpoint's defaults for generation (API-CONTRACT 4, `generation_defaults`): JSON, `{}` when unset. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE endpoints ADD COLUMN generation_defaults TEXT NOT NULL DEFAULT '{}'`.execute(db);
}
