import { type Kysely, sql } from 'kysely';

/**
 * SQLite's migration 0021 (a dataset's selection of files and folders, which says what each column is).
 * Paths, prefixes and timestamps compare by their bytes (COLLATE "C") as in SQLite.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE dataset_selection (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      path TEXT COLLATE "C" NOT NULL,
      kind TEXT NOT NULL,
      position BIGINT NOT NULL,
      prefix TEXT COLLATE "C" NOT NULL,
      added_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (dataset_id, path)
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX dataset_selection_prefix ON dataset_selection (dataset_id, prefix)`.execute(db);
  await sql`
    INSERT INTO dataset_selection (dataset_id, path, kind, position, prefix, added_at)
    SELECT id, configuration::jsonb ->> 'ingestionPath', 'folder', 0, '', created_at FROM datasets
    WHERE dtype = 'local_file' AND configuration::jsonb ->> 'ingestionPath' IS NOT NULL`.execute(db);
}
