import { type Kysely, sql } from 'kysely';

/**
 * Embedding shared by the replicas of a cluster (src/coordination/postgres/embedding-windows.ts; cluster
 * mode only: a single SQLite node embeds alone, and test/postgres-schema.test.ts lists these tables as
 * PostgreSQL's own).
 *
 * - `embedding_windows`: the windows of chunks that replicas are embedding, one row per file part of a
 *   window (rows `from_row`..`to_row` of the dataset's chunks, which are numbered once per dataset), held by
 *   `claimer` until `expires_at` (the server's clock), renewed while it works and deleted once its vectors
 *   are written. A claimer that dies leaves its rows to lapse, and another replica takes them over.
 * - `embedding_probes`: each replica's vector of one fixed text with a dataset's embedder; a replica
 *   embeds a dataset's windows only when its probe agrees with the one of the replica holding the dataset.
 *
 * Frozen once released: add a new file rather than editing this one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE embedding_windows (
      dataset_id TEXT NOT NULL,
      from_row BIGINT NOT NULL,
      to_row BIGINT NOT NULL,
      file_key TEXT NOT NULL,
      window_id TEXT NOT NULL,
      claimer TEXT NOT NULL,
      expires_at TIMESTAMPTZ NOT NULL,
      PRIMARY KEY (dataset_id, from_row)
    )`.execute(db);
  await sql`CREATE INDEX embedding_windows_window ON embedding_windows(window_id)`.execute(db);
  await sql`CREATE INDEX embedding_windows_file ON embedding_windows(dataset_id, file_key, from_row)`.execute(db);

  await sql`
    CREATE TABLE embedding_probes (
      dataset_id TEXT NOT NULL,
      replica TEXT NOT NULL,
      embedder TEXT NOT NULL,
      probe TEXT NOT NULL,
      updated_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY (dataset_id, replica)
    )`.execute(db);
}
