import { type Kysely, sql } from 'kysely';

/**
 * Two-phase indexing: a file's chunks are keyword-searchable before their vectors are written.
 *
 * - `dataset_files` gains the status `searchable` (its chunks are in the keyword index, vectors are still
 *   being made) and `chunks_embedded`. SQLite cannot change a CHECK constraint, so the table is rebuilt.
 * - `vector_sets`: each file's chunks are one set of consecutive row ids in `vector_chunks`, and a set is
 *   `staged` (being written, hidden), `visible` (the file's chunks), or `garbage` (hidden, being deleted in
 *   small batches). Swapping a file's old set for its new one is one row update, however many chunks it has;
 *   `embedded` counts the set's first chunks that have a vector (they are embedded in order).
 * - `vector_row_counter`: the next free row id, so each set's ids are reserved in one block before it is written.
 *
 * The existing chunks become one visible set per file, every chunk with its vector. Each file was written in
 * one transaction, so its row ids are consecutive.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`BEGIN IMMEDIATE`.execute(db);
  try {
    await sql`
      CREATE TABLE dataset_files_new (
        dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        content_hash TEXT,
        size INTEGER NOT NULL DEFAULT 0,
        mtime_ms INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL CHECK (status IN ('queued', 'indexing', 'searchable', 'indexed', 'failed', 'removed')),
        chunks INTEGER NOT NULL DEFAULT 0,
        -- chunks that have their vector: the first ones, in order (status searchable until all do)
        chunks_embedded INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        generation INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (dataset_id, path)
      )`.execute(db);
    await sql`
      INSERT INTO dataset_files_new
        (dataset_id, path, content_hash, size, mtime_ms, status, chunks, chunks_embedded, error, generation, updated_at)
      SELECT dataset_id, path, content_hash, size, mtime_ms, status, chunks,
             CASE WHEN status = 'indexed' THEN chunks ELSE 0 END, error, generation, updated_at
      FROM dataset_files`.execute(db);
    await sql`DROP TABLE dataset_files`.execute(db);
    await sql`ALTER TABLE dataset_files_new RENAME TO dataset_files`.execute(db);
    await sql`CREATE INDEX dataset_files_status ON dataset_files(dataset_id, status)`.execute(db);

    await sql`
      CREATE TABLE vector_sets (
        id INTEGER PRIMARY KEY,
        dataset_id TEXT NOT NULL REFERENCES vector_indexes(dataset_id) ON DELETE CASCADE,
        file_key TEXT NOT NULL,
        first_row INTEGER NOT NULL,
        last_row INTEGER NOT NULL,
        count INTEGER NOT NULL,
        embedded INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL CHECK (state IN ('staged', 'visible', 'garbage'))
      )`.execute(db);
    await sql`CREATE INDEX vector_sets_file ON vector_sets(dataset_id, file_key)`.execute(db);
    await sql`CREATE INDEX vector_sets_state ON vector_sets(state, dataset_id)`.execute(db);
    await sql`
      INSERT INTO vector_sets (dataset_id, file_key, first_row, last_row, count, embedded, state)
      SELECT dataset_id, file_key, min(row_id), max(row_id), count(*), count(*), 'visible'
      FROM vector_chunks GROUP BY dataset_id, file_key`.execute(db);
    await sql`
      CREATE TABLE vector_row_counter (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        next_row INTEGER NOT NULL
      )`.execute(db);
    await sql`INSERT INTO vector_row_counter (id, next_row) SELECT 1, coalesce(max(row_id), 0) + 1 FROM vector_chunks`.execute(db);
    await sql`COMMIT`.execute(db);
  } catch (error) {
    await sql`ROLLBACK`.execute(db);
    throw error;
  }
}
