import { type Kysely, sql } from 'kysely';

/**
 * A chunk's later pieces (issue 23, item 2: vectors over the whole chunk): the vectors of the pieces after
 * its first, which the vector index holds, as float32s one after another (vectors/piece-similarity.ts).
 * NULL when the chunk fits in its embedder's window, and for chunks embedded before this migration, which
 * keep their one vector until their file is indexed again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE vector_chunks ADD COLUMN later_pieces BLOB`.execute(db);
}
