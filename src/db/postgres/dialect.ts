import { type ReservedSQL, SQL } from 'bun';
import { PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';

/**
 * Kysely's PostgresDialect over Bun's own PostgreSQL client (`Bun.SQL`), so cluster mode needs no driver
 * package and works in the compiled binary (checked: issue 26's feasibility study).
 */
export function bunPostgresDialect(sql: SQL): PostgresDialect {
  return new PostgresDialect({ pool: new BunSqlPool(sql) });
}

/**
 * Bun's pool seen as the `pg.Pool` subset Kysely uses: connect, query(text, parameters), release, end.
 *
 * Kysely asks for a connection for every single statement, and for every transaction. A statement alone
 * runs on Bun's pool as it is; a connection is reserved only when a transaction begins, and kept until
 * Kysely gives it back (reserving one for every statement made a one-row query 5 times slower: 0.65 ms
 * instead of 0.12). So a "connection" is one server session only from its BEGIN on: outside a
 * transaction, its statements may each run on another session (no SET, temporary table or session lock
 * outside a transaction; knode uses none).
 */
class BunSqlPool implements PostgresPool {
  constructor(private readonly sql: SQL) {}

  async connect(): Promise<PostgresPoolClient> {
    // Kysely's client type also takes a cursor (streaming), which knode never asks for.
    return new BunSqlClient(this.sql) as unknown as PostgresPoolClient;
  }

  async end(): Promise<void> {
    await this.sql.close();
  }
}

class BunSqlClient {
  private reserved: ReservedSQL | undefined;

  constructor(private readonly pool: SQL) {}

  async query<R>(text: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    if (!this.reserved && BEGINS_TRANSACTION.test(text)) this.reserved = await this.pool.reserve();
    const result = await (this.reserved ?? this.pool).unsafe(text, parameters as unknown[]);
    return {
      command: result.command as PostgresQueryResult<R>['command'],
      rowCount: result.affectedRows ?? result.count,
      rows: numbersAsSqliteGivesThem(result) as R[],
    };
  }

  release(): void {
    // A connection released inside a transaction left open is closed by Bun, never reused.
    void this.reserved?.release();
    this.reserved = undefined;
  }
}

/** What Kysely's PostgresDriver sends to begin a transaction: `begin`, or `start transaction …`. */
const BEGINS_TRANSACTION = /^\s*(begin|start\s+transaction)\b/i;

/** Type OIDs that Bun returns as strings: int8 (count(*), sum(int4), BIGINT columns) and numeric (sum(int8)). */
const INT8 = 20;
const NUMERIC = 1700;

/**
 * The rows with every int8 and numeric value as a JavaScript number. bun:sqlite returns numbers for
 * every integer and real, and the row types of db/schema.ts say `number` (millisecond timestamps, counts,
 * sums): Bun.SQL returns these two types as strings (its `bigint` option gives BigInts instead, which
 * the repositories do not expect either). Values past 2^53 would lose precision; knode stores none
 * (milliseconds since the epoch are 2^41).
 */
function numbersAsSqliteGivesThem(result: SQL.ResultMetadata & unknown[]): unknown[] {
  const columns = result.columns?.filter((column) => column.type === INT8 || column.type === NUMERIC).map((column) => column.name);
  if (!columns || columns.length === 0) return result;
  for (const row of result as Record<string, unknown>[]) {
    for (const column of columns) {
      const value = row[column];
      if (typeof value === 'string') row[column] = Number(value);
    }
  }
  return result;
}

/** The SQLSTATE of a failed PostgreSQL query (Bun.SQL reports it in `errno`), if `error` is one. */
export function postgresState(error: unknown): string | undefined {
  return error instanceof SQL.PostgresError ? error.errno : undefined;
}

/** unique_violation: a row with the same key exists (what SQLite calls SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY). */
export function isPostgresUniqueViolation(error: unknown): boolean {
  return postgresState(error) === '23505';
}
