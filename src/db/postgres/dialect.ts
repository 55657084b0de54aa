import { SQL } from 'bun';
import { PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';

/**
 * Kysely's PostgresDialect over Bun's own PostgreSQL client (`Bun.SQL`), so cluster mode needs no driver
 * package and works in the compiled binary (checked: issue 26's feasibility study). Kysely asks its pool
 * for a connection per query, or per transaction, and gives it back after: here that is one reserved
 * connection of Bun's pool (`reserve()`), on which Kysely's own BEGIN / COMMIT run.
 */
export function bunPostgresDialect(sql: SQL): PostgresDialect {
  return new PostgresDialect({ pool: new BunSqlPool(sql) });
}

/** Bun's pool seen as the `pg.Pool` subset Kysely uses: connect, query(text, parameters), release, end. */
export class BunSqlPool implements PostgresPool {
  constructor(private readonly sql: SQL) {}

  async connect(): Promise<PostgresPoolClient> {
    const reserved = await this.sql.reserve();
    const client = {
      async query<R>(text: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
        const result = await reserved.unsafe(text, parameters as unknown[]);
        return {
          command: result.command as PostgresQueryResult<R>['command'],
          rowCount: result.affectedRows ?? result.count,
          rows: numbersAsSqliteGivesThem(result) as R[],
        };
      },
      release(): void {
        // A connection released inside a transaction Kysely left open is closed by Bun, never reused.
        void reserved.release();
      },
    };
    // Kysely's client type also takes a cursor (streaming), which knode never asks for.
    return client as PostgresPoolClient;
  }

  async end(): Promise<void> {
    await this.sql.close();
  }
}

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
