import { type Kysely, sql } from 'kysely';

/**
 * The vector store's shared tables. Each dataset also gets its own sqlite-vec `vec0` table and FTS5
 * table, created at run time by src/vectors/store.ts; their rows use `vector_chunks.row_id` as rowid.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE vector_indexes (
      dataset_id TEXT PRIMARY KEY,
      dimension INTEGER NOT NULL CHECK (dimension > 0),
      chunk_count INTEGER NOT NULL DEFAULT 0,
      created_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE vector_chunks (
      row_id INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      dataset_id TEXT NOT NULL REFERENCES vector_indexes(dataset_id) ON DELETE CASCADE,
      file_key TEXT NOT NULL,
      content TEXT NOT NULL,
      metadata TEXT NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX vector_chunks_file ON vector_chunks(dataset_id, file_key)`.execute(db);
}
