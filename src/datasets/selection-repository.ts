import type { Kysely, Transaction } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import type { SelectedEntry } from '../ingestion/selection-entries.ts';

/**
 * A `local_file` dataset's selection of files and folders (migration 0021; PostgreSQL 0008): its entries and
 * the states of the files they hold. The table is this module's own: its row type is declared here and added
 * to the database's for these queries. Callers have checked that the dataset is the tenant's.
 */
interface DatasetSelectionTable {
  dataset_id: string;
  path: string;
  kind: string;
  /** The order entries were added in (0 for the dataset's first folder). */
  position: number;
  prefix: string;
  added_at: string;
}

export interface SelectionRow extends SelectedEntry {
  readonly addedAt: string;
}

/** A live file of the dataset, as its entry's progress counts it. */
export interface SelectedFileState {
  readonly path: string;
  readonly status: string;
  readonly chunks: number;
  readonly chunksEmbedded: number;
}

type SelectionTables = { dataset_selection: DatasetSelectionTable };

function tables(db: DbOrTransaction): Kysely<Database & SelectionTables> | Transaction<Database & SelectionTables> {
  return db.withTables<SelectionTables>();
}

/** The dataset's entries in the order they were added (the entry it was created with first). */
export async function selectionOf(db: DbOrTransaction, datasetId: string): Promise<SelectionRow[]> {
  const rows = await tables(db)
    .selectFrom('dataset_selection')
    .select(['path', 'kind', 'prefix', 'added_at'])
    .where('dataset_id', '=', datasetId)
    .orderBy('position')
    .execute();
  return rows.map((row) => ({ path: row.path, kind: row.kind === 'file' ? 'file' : 'folder', prefix: row.prefix, addedAt: row.added_at }));
}

/** Adds entries after the dataset's others, in the order given. */
export async function insertEntries(db: DbOrTransaction, datasetId: string, entries: readonly SelectionRow[]): Promise<void> {
  if (entries.length === 0) return;
  const last = await tables(db)
    .selectFrom('dataset_selection')
    .select((eb) => eb.fn.max('position').as('position'))
    .where('dataset_id', '=', datasetId)
    .executeTakeFirst();
  const after = last?.position === null || last?.position === undefined ? -1 : Number(last.position);
  const rows = entries.map((entry, index) => ({
    dataset_id: datasetId,
    path: entry.path,
    kind: entry.kind,
    position: after + 1 + index,
    prefix: entry.prefix,
    added_at: entry.addedAt,
  }));
  await tables(db).insertInto('dataset_selection').values(rows).execute();
}

export async function deleteEntries(db: DbOrTransaction, datasetId: string, paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return;
  await tables(db)
    .deleteFrom('dataset_selection')
    .where('dataset_id', '=', datasetId)
    .where('path', 'in', [...paths])
    .execute();
}

/** Every file of the dataset not removed, with its state: what each entry's progress is counted from. */
export async function liveFileStates(db: DbOrTransaction, datasetId: string): Promise<SelectedFileState[]> {
  const rows = await db
    .selectFrom('dataset_files')
    .select(['path', 'status', 'chunks', 'chunks_embedded'])
    .where('dataset_id', '=', datasetId)
    .where('status', '<>', 'removed')
    .execute();
  return rows.map((row) => ({
    path: row.path,
    status: row.status,
    chunks: Number(row.chunks),
    chunksEmbedded: Number(row.chunks_embedded),
  }));
}
