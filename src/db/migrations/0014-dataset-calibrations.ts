import { type Kysely, sql } from 'kysely';

/**
 * A dataset's own calibration (vectors/self-calibration.ts): fitted from pseudo-questions on its documents
 * once it is indexed, and again as it grows; searches use it instead of the shipped constants while its
 * embedder is the dataset's. Written and read by vectors/store.ts, like the other vector tables.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE vector_calibrations (
      dataset_id TEXT PRIMARY KEY,
      embedder TEXT NOT NULL,
      fitted_at TEXT NOT NULL,
      questions INTEGER NOT NULL,
      unanswerable INTEGER NOT NULL,
      chunk_count INTEGER NOT NULL,
      calibration TEXT NOT NULL
    )`.execute(db);
}
