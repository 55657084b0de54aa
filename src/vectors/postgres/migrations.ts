import { type Kysely, type Migration, sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { migrateSchema } from '../../db/migrate.ts';

/**
 * The PostgreSQL store's shared tables, migrated by the store itself (its own migration table), since they
 * belong to this engine: the control tables (src/db/postgres/migrations) hold vector_calibrations, which
 * both engines share in meaning, and leave these out.
 *
 * - vector_indexes: a dataset's index, with what BM25 needs of its whole keyword index (rows and tokens of
 *   every state, as FTS5 counts them), the next row id of its chunks and its postings' layout;
 * - vector_sets: each file's chunks as a set of consecutive row ids, staged, visible or garbage (as in the
 *   SQLite store, chunk-sets.ts).
 */
const storeTables: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      CREATE TABLE vector_indexes (
        dataset_id TEXT PRIMARY KEY,
        dimension INTEGER NOT NULL CHECK (dimension > 0),
        chunk_count BIGINT NOT NULL DEFAULT 0,
        keyword_rows BIGINT NOT NULL DEFAULT 0,
        keyword_tokens BIGINT NOT NULL DEFAULT 0,
        next_row BIGINT NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL
      )`.execute(db);
    await sql`
      CREATE TABLE vector_sets (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        dataset_id TEXT NOT NULL REFERENCES vector_indexes(dataset_id) ON DELETE CASCADE,
        file_key TEXT NOT NULL,
        first_row BIGINT NOT NULL,
        last_row BIGINT NOT NULL,
        count INTEGER NOT NULL,
        embedded INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL CHECK (state IN ('staged', 'visible', 'garbage'))
      )`.execute(db);
    await sql`CREATE INDEX vector_sets_file ON vector_sets (dataset_id, file_key)`.execute(db);
    await sql`CREATE INDEX vector_sets_hidden ON vector_sets (dataset_id, state) WHERE state <> 'visible'`.execute(db);
  },
};

/**
 * Which layout a dataset's postings are in (dataset-tables.ts, POSTINGS_LAYOUT), so that a knode reading
 * another layout says so instead of ranking with the wrong numbers (the SQLite store's keyword_layout).
 */
const postingsLayout: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`ALTER TABLE vector_indexes ADD COLUMN postings_layout INTEGER NOT NULL DEFAULT 1`.execute(db);
  },
};

/**
 * Which vectors a dataset's chunks have (../piece-similarity.ts, VECTOR_LAYOUT), as in the SQLite store (its
 * migration 0024): indexes made before whole-chunk vectors are in layout 1 until their later pieces are made.
 */
const vectorLayout: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`ALTER TABLE vector_indexes ADD COLUMN vector_layout INTEGER NOT NULL DEFAULT 1`.execute(db);
  },
};

const vectorStoreMigrations: Record<string, Migration> = {
  '0001-store-tables': storeTables,
  '0002-postings-layout': postingsLayout,
  '0003-vector-layout': vectorLayout,
};

/** Brings the store's tables to the newest migration (replicas starting together: the migrator's lock). */
export async function migrateVectorStore(db: Db): Promise<void> {
  await migrateSchema(db as Kysely<unknown>, vectorStoreMigrations, {
    name: "the vector store's tables",
    migrationTable: 'vector_store_migrations',
    lockTable: 'vector_store_migrations_lock',
  });
}
