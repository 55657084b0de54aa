import { Database as SqliteDatabase } from 'bun:sqlite';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresAdapter, SqliteDialect, type Transaction } from 'kysely';
import { migrateSchema } from './migrate.ts';
import { migrations } from './migrations/index.ts';
import { isPostgresUniqueViolation, postgresState } from './postgres/dialect.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;
export type DbOrTransaction = Kysely<Database> | Transaction<Database>;

export interface OpenedDatabase {
  readonly db: Db;
  /**
   * Runs synchronous bun:sqlite work (atomic counters, sqlite-vec) on the one connection while holding
   * Kysely's connection lock, so it can never land inside a Kysely transaction that is awaiting something.
   */
  exclusive<T>(work: (sqlite: SqliteDatabase) => T): Promise<T>;
  close(): Promise<void>;
}

/**
 * Kysely's SqliteDialect expects better-sqlite3's interface, which does not load in Bun; bun:sqlite
 * differs only in spreading parameters and in how a statement says it returns rows.
 */
export function kyselyAdapter(sqlite: SqliteDatabase) {
  return {
    close: () => sqlite.close(),
    prepare(sqlText: string) {
      const statement = sqlite.query(sqlText); // cached per SQL text by bun:sqlite (QUERY_CACHE_SIZE)
      return {
        reader: statement.columnNames.length > 0,
        all: (parameters: ReadonlyArray<unknown>) => statement.all(...(parameters as never[])) as unknown[],
        run: (parameters: ReadonlyArray<unknown>) => statement.run(...(parameters as never[])),
        iterate: (parameters: ReadonlyArray<unknown>) => statement.iterate(...(parameters as never[])) as IterableIterator<unknown>,
      };
    },
  };
}

/**
 * Prepared statements bun:sqlite keeps per connection, most recently used first. Its default, 20, is fewer
 * than the statements one ingesting file runs (Kysely's and the store's, several per dataset's tables): each
 * was compiled again every time, 7% of the main thread's work while indexing (a CPU profile of
 * scripts/bench/ingest.ts). A statement is a few kilobytes.
 */
const QUERY_CACHE_SIZE = 1_000;

/**
 * Opens (creating if needed) `<dataDir>/knode.db`, applies the pragmas, loads the extensions and runs
 * pending migrations. Extensions come first: once the schema holds a table of an extension's module
 * (sqlite-vec's vec0), SQLite cannot even parse the schema without it.
 */
export async function openDatabase(dataDir: string, extensions: readonly string[] = []): Promise<OpenedDatabase> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  SqliteDatabase.MAX_QUERY_CACHE_SIZE = Math.max(SqliteDatabase.MAX_QUERY_CACHE_SIZE, QUERY_CACHE_SIZE);
  const sqlite = new SqliteDatabase(join(dataDir, 'knode.db'), { create: true });
  for (const extension of extensions) sqlite.loadExtension(extension);
  sqlite.run('PRAGMA journal_mode = WAL');
  sqlite.run('PRAGMA synchronous = NORMAL');
  sqlite.run('PRAGMA busy_timeout = 5000');
  sqlite.run('PRAGMA foreign_keys = ON');
  // Searches read whole vec0 tables: memory-mapped reads take a third of the time of read() copies
  // (scripts/bench/search.ts). 1 GiB is address space, not memory: pages are shared with the OS cache.
  sqlite.run('PRAGMA mmap_size = 1073741824');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
  await migrateSchema(db as Kysely<unknown>, migrations, { name: `the database ${join(dataDir, 'knode.db')}` });
  return {
    db,
    exclusive: (work) => db.connection().execute(async () => work(sqlite)),
    close: async () => {
      await db.destroy(); // closes the bun:sqlite handle too
    },
  };
}

const BUSY_RETRIES = 5;

/**
 * Runs `work` in one transaction: all of it is written, or none. Another process holding the write lock
 * (SQLITE_BUSY) is waited for by busy_timeout; if it still wins, the whole transaction is retried. On
 * PostgreSQL, a transaction the server chose to abort for another one (a deadlock between replicas, a
 * serialization failure) is retried the same way: it wrote nothing.
 */
export async function inTransaction<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(work);
    } catch (error) {
      if (!isRetryable(error) || attempt >= BUSY_RETRIES) throw error;
      await Bun.sleep(20 * attempt);
    }
  }
}

/** serialization_failure and deadlock_detected: PostgreSQL rolled the transaction back, and asks for it again. */
const POSTGRES_RETRY_STATES = new Set(['40001', '40P01']);

function isRetryable(error: unknown): boolean {
  return isBusy(error) || POSTGRES_RETRY_STATES.has(postgresState(error) ?? '');
}

function sqliteCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

function isBusy(error: unknown): boolean {
  return sqliteCode(error)?.startsWith('SQLITE_BUSY') ?? false;
}

/** A row with the same key exists: SQLite's unique or primary key constraint, or PostgreSQL's SQLSTATE 23505. */
export function isUniqueViolation(error: unknown): boolean {
  const code = sqliteCode(error);
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || isPostgresUniqueViolation(error);
}

/**
 * Whether `db` (or a transaction of it) is a PostgreSQL database (cluster mode). Shared code writes
 * portable SQL; only a row lock a shared database needs and SQLite has no syntax for (its one connection
 * serialises the same work) is added where this answers true.
 */
export function isPostgres(db: DbOrTransaction): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
