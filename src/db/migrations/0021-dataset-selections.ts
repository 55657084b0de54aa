import { type Kysely, sql } from 'kysely';

/**
 * Several files and folders per `local_file` dataset (issue 27, item 3; API-CONTRACT 4, "Selections"):
 * `dataset_selection` holds a dataset's entries, each a file or a folder (`kind`) by its real path, and the
 * `prefix` its files are listed under in `dataset_files` (and cited by as `metadata.source`): '' for the entry
 * the dataset was created with (its files keep the paths relative to that folder they always had), the entry's
 * own name (made unique within the dataset) for every entry added later; `position` keeps the order
 * entries were added in. Each existing `local_file` dataset
 * gets one entry from its `ingestionPath`. Plain SQL: the same table on PostgreSQL (its migration 0008).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE dataset_selection (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      path TEXT NOT NULL,
      kind TEXT NOT NULL,
      position INTEGER NOT NULL,
      prefix TEXT NOT NULL,
      added_at TEXT NOT NULL,
      PRIMARY KEY (dataset_id, path)
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX dataset_selection_prefix ON dataset_selection (dataset_id, prefix)`.execute(db);
  await sql`
    INSERT INTO dataset_selection (dataset_id, path, kind, position, prefix, added_at)
    SELECT id, json_extract(configuration, '$.ingestionPath'), 'folder', 0, '', created_at FROM datasets
    WHERE dtype = 'local_file' AND json_extract(configuration, '$.ingestionPath') IS NOT NULL`.execute(db);
}
