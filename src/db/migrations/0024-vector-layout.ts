import { type Kysely, sql } from 'kysely';

/**
 * Which vectors a dataset's chunks have (vectors/piece-similarity.ts, VECTOR_LAYOUT): 1, each chunk's opening
 * alone, as every index made before whole-chunk vectors; 2, its later pieces too. An index in layout 1 gets the
 * later pieces of its chunks in the background (ingestion/piece-backfill.ts), then moves to 2.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE vector_indexes ADD COLUMN vector_layout INTEGER NOT NULL DEFAULT 1`.execute(db);
}
