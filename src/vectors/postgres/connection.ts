import { CompiledQuery } from 'kysely';
import type { Db, DbOrTransaction } from '../../db/database.ts';
import type { FencingLease } from '../store.ts';

/** One SQL statement with `$1`-style parameters, on the transaction it was given to; its rows. */
export type Query = <R = Record<string, unknown>>(text: string, parameters?: readonly unknown[]) => Promise<R[]>;

/**
 * The PostgreSQL store's one way to the database: a read is a read-only transaction at REPEATABLE READ,
 * so that all its statements see one snapshot (as the SQLite store's reads see one state); a write is one
 * short transaction, timed, fenced first when it is made under a dataset's lease (../store.ts, FencingLease:
 * the lease row is read FOR SHARE, so a takeover waits for the write, and a former holder's write is
 * refused and rolled back). Statements are written in SQL (per-dataset tables have run-time names), sent
 * through Kysely so that the driver (Bun.SQL in knode, PGlite in tests) is the database's own.
 */
export class PostgresConnection {
  private longestWrite = 0;

  constructor(readonly db: Db) {}

  /** The longest write transaction so far, in milliseconds. */
  get longestWriteMs(): number {
    return this.longestWrite;
  }

  read<T>(work: (query: Query) => Promise<T>): Promise<T> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (trx) => {
        const query = queryOn(trx);
        // A search's statements are short; the JIT compiler, which starts at a plan's estimated cost,
        // added 40 ms of compiling to a search of a few milliseconds (measured).
        await query('SET LOCAL jit = off');
        return work(query);
      });
  }

  async write<T>(work: (query: Query) => Promise<T>, lease?: FencingLease): Promise<T> {
    const started = performance.now();
    try {
      return await this.db.transaction().execute(async (trx) => {
        await lease?.fence(trx);
        return work(queryOn(trx));
      });
    } finally {
      this.longestWrite = Math.max(this.longestWrite, performance.now() - started);
    }
  }

  /** A statement outside any transaction (the schema checks at start-up). */
  query: Query = (text, parameters) => queryOn(this.db)(text, parameters);
}

function queryOn(db: DbOrTransaction): Query {
  return async <R>(text: string, parameters: readonly unknown[] = []) =>
    (await db.executeQuery<R>(CompiledQuery.raw(text, [...parameters]))).rows as R[];
}

/**
 * Many rows as one parameter: a JSON text, read back with json_array_elements (`$n::text::json`). A
 * statement takes at most 65,535 parameters, and a file's keyword postings are tens of thousands of rows.
 * The text parameter is cast from text, never sent as json: Bun.SQL would encode a JSON string again.
 * PostgreSQL's text holds no NUL and no lone surrogate (JSON escapes of either are refused): both become
 * U+FFFD, as bun:sqlite writes a lone surrogate in the SQLite store (both separate words, as NUL does).
 */
export function jsonRows(rows: readonly unknown[]): string {
  return JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'string' ? storableText(value) : value));
}

function storableText(text: string): string {
  const wellFormed = (text as string & { toWellFormed(): string }).toWellFormed();
  return wellFormed.includes('\0') ? wellFormed.replaceAll('\0', '\uFFFD') : wellFormed;
}

/**
 * `= ANY(...)` of a jsonRows parameter: a list the planner looks up through an index (an `IN (SELECT ...)`
 * of a set-returning function may be planned as a scan of the whole table).
 */
export function anyText(parameter: number): string {
  return `= ANY(ARRAY(SELECT json_array_elements_text($${parameter}::text::json)))`;
}

export function anyRow(parameter: number): string {
  return `= ANY(ARRAY(SELECT json_array_elements_text($${parameter}::text::json)::bigint))`;
}
