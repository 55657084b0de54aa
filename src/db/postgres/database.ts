import { SQL } from 'bun';
import { Kysely } from 'kysely';
import { errorMessage } from '../../domain/errors.ts';
import type { Db } from '../database.ts';
import { migrateSchema } from '../migrate.ts';
import type { Database } from '../schema.ts';
import { bunPostgresDialect } from './dialect.ts';
import { postgresMigrations } from './migrations/index.ts';

/** The oldest server cluster mode is written for (generated columns, `GENERATED … AS IDENTITY`, pgvector 0.8). */
const MINIMUM_SERVER_VERSION = 150_000;

/**
 * PostgreSQL could not be used at start-up (unreachable, too old, a migration failed): its message is one
 * line naming the server without its password, which start-up prints as it is (startup.ts, by `code`).
 */
class PostgresStartError extends Error {
  readonly code = 'KNODE_POSTGRES_START';
}

export interface OpenedPostgres {
  readonly db: Db;
  close(): Promise<void>;
}

export interface PostgresOptions {
  /** Connections of this process's pool (Bun.SQL's default is 10). */
  readonly maxConnections?: number;
  /** Seconds to wait for a connection before the start fails. */
  readonly connectTimeoutSeconds?: number;
}

/**
 * Connects to `url` (postgres://…), checks the server, and brings the control tables to the newest
 * migration. Replicas starting together run the migrations once: Kysely's migrator holds a PostgreSQL
 * advisory lock while it migrates. A server that cannot be reached, or is too old, is an error that names
 * it (without its password), for the start-up failure to print.
 */
export async function openPostgresDatabase(url: string, options: PostgresOptions = {}): Promise<OpenedPostgres> {
  const where = describeUrl(url);
  const client = new SQL(url, {
    max: options.maxConnections ?? 10,
    connectionTimeout: options.connectTimeoutSeconds ?? 10,
    // A connection idle for a minute is closed: replicas behind a pooler hold no more than they use.
    idleTimeout: 60,
  });
  const db = new Kysely<Database>({ dialect: bunPostgresDialect(client) });
  try {
    let version: number;
    try {
      const [row] = await client.unsafe(`SELECT current_setting('server_version_num')::int AS version`);
      version = Number(row?.version);
    } catch (error) {
      throw new PostgresStartError(`PostgreSQL at ${where} cannot be reached: ${connectionFailure(error)}`);
    }
    if (version < MINIMUM_SERVER_VERSION) {
      throw new PostgresStartError(`PostgreSQL at ${where} is version ${Math.floor(version / 10_000)}: cluster mode needs 15 or newer`);
    }
    await migrate(db, where);
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw error;
  }
  return { db, close: () => db.destroy() };
}

async function migrate(db: Db, where: string): Promise<void> {
  try {
    await migrateSchema(db as Kysely<unknown>, postgresMigrations, { name: `PostgreSQL at ${where}` });
  } catch (error) {
    throw new PostgresStartError(errorMessage(error));
  }
}

/**
 * Why a connection failed, in words an operator can act on: Bun says only "Failed to connect" when the
 * address refuses or does not resolve, and the kind is in its code (ERR_POSTGRES_CONNECTION_REFUSED...);
 * the server's own refusals (a wrong password, a missing database) carry their message.
 */
function connectionFailure(error: unknown): string {
  const reason = errorMessage(error);
  if (error instanceof SQL.PostgresError && error.code !== 'ERR_POSTGRES_SERVER_ERROR') return `${reason} (${error.code})`;
  return reason;
}

/** user@host:port/database, for messages: never the password. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : '';
    return `${user}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the configured URL (not a valid URL)';
  }
}
