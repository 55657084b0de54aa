import { Database as SqliteDatabase } from 'bun:sqlite';
import { join } from 'node:path';
import { SQL } from 'bun';
import { Kysely, SqliteDialect } from 'kysely';
import { type Db, kyselyAdapter } from '../../src/db/database.ts';
import { openPostgresDatabase } from '../../src/db/postgres/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { PostgresVectorStore } from '../../src/vectors/postgres/store.ts';
import { type PrivatePostgres, startPostgres } from './postgres.ts';

/**
 * Which engine the test apps (`createTestApp`, app.ts) keep their state in: SQLite in the data folder (the
 * default), or with `KNODE_TEST_ENGINE=postgres` PostgreSQL in cluster mode (issue 26: the route tests run
 * on both engines; `npm run test:postgres`).
 *
 * On PostgreSQL a test process has one private cluster (started by the first app, stopped when the process
 * ends: postgres.ts's watchdog), the server with pgvector, so that vector and hybrid search answer as on
 * SQLite. Each data folder has a database of its own, made from a template database migrated once per
 * process (a copy takes a few milliseconds, migrating a new one about a second): an app reopened on the same
 * data folder (a restart, `close({ keepData: true })`) finds what the first one wrote, and a folder's
 * database is dropped when its app closes without `keepData`.
 */
export type TestEngine = 'sqlite' | 'postgres';

export const testEngine: TestEngine = process.env.KNODE_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * What the search engine says of itself on this run's engine (a provisioner's details, a query's
 * provider_info): sqlite-vec as bun:sqlite loads it, or the pgvector that test/vendor/build-pgvector.sh builds.
 */
export const engineSearch =
  testEngine === 'postgres'
    ? { vectorStore: 'pgvector', vectorStoreVersion: '0.8.6' }
    : { vectorStore: 'sqlite-vec', vectorStoreVersion: 'v0.1.9' };

/** Cluster mode's keys: the same for every app of the run, as every replica of a cluster has them. */
const CLUSTER_KEYS = {
  SVC_JWT_SECRET: 'the-test-apps-jwt-secret-of-32-characters',
  SVC_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
};

/**
 * Each app's pool may open 10 connections and its change log listens on one more; a test may hold several
 * apps open at once (restarts, replicas) beside the maintenance connection, and PostgreSQL's test setting of 60
 * is met soon.
 */
const SERVER_SETTINGS = ['max_connections=300'];

const TEMPLATE = 'knode_test_template';

interface Cluster {
  postgres: PrivatePostgres;
  /** One connection to the maintenance database: it creates and drops the apps' databases, one at a time. */
  maintenance: SQL;
}

let cluster: Promise<Cluster> | undefined;
/** The database of each data folder that has one, by folder. */
const databases = new Map<string, string>();
let databaseCounter = 0;

/** The URL of another database of the cluster. */
function databaseUrl(postgres: PrivatePostgres, database: string): string {
  return postgres.url.replace(/\/[^/]*$/, `/${database}`);
}

function sharedCluster(): Promise<Cluster> {
  cluster ??= (async () => {
    const postgres = await startPostgres({ pgvector: true, settings: SERVER_SETTINGS });
    const maintenance = new SQL(databaseUrl(postgres, 'postgres'), { max: 1 });
    await maintenance.unsafe(`CREATE DATABASE ${TEMPLATE}`);
    // The template holds what every app's start would otherwise migrate: the control tables and the vector store's.
    const migrated = await openPostgresDatabase(databaseUrl(postgres, TEMPLATE));
    try {
      await PostgresVectorStore.open(migrated.db);
    } finally {
      await migrated.close();
    }
    return { postgres, maintenance };
  })();
  return cluster;
}

/**
 * The SVC_* variables that put an app on `dataDir` in this run's engine: none on SQLite; on PostgreSQL the
 * URL of the folder's database (created from the template the first time) and cluster mode's two keys.
 */
export async function engineEnvironment(dataDir: string): Promise<Record<string, string>> {
  if (testEngine === 'sqlite') return {};
  const { postgres, maintenance } = await sharedCluster();
  let database = databases.get(dataDir);
  if (database === undefined) {
    database = `knode_test_${++databaseCounter}`;
    // FILE_COPY: the template's files copied as they are (no durability is asked of this server), not written through the WAL.
    await maintenance.unsafe(`CREATE DATABASE ${database} TEMPLATE ${TEMPLATE} STRATEGY FILE_COPY`);
    databases.set(dataDir, database);
  }
  return { SVC_DATABASE_URL: databaseUrl(postgres, database), ...CLUSTER_KEYS };
}

/** Forgets `dataDir`'s state once its app closed for good: its database, on PostgreSQL. */
export async function dropEngineData(dataDir: string): Promise<void> {
  const database = databases.get(dataDir);
  if (database === undefined || cluster === undefined) return;
  databases.delete(dataDir);
  const { maintenance } = await cluster;
  await maintenance.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}

/**
 * The database of `dataDir` while no app has it open (closed with `keepData`, not yet restarted), to read what
 * the stopped app left (or, `writable`, to make it look like an older knode's): the data folder's SQLite file,
 * read-only unless `writable`, or the folder's PostgreSQL database.
 */
export async function stoppedDatabase(dataDir: string, { writable = false } = {}): Promise<{ db: Db; close(): Promise<void> }> {
  const database = databases.get(dataDir);
  if (database !== undefined && cluster !== undefined) {
    const { postgres } = await cluster;
    return openPostgresDatabase(databaseUrl(postgres, database));
  }
  const sqlite = new SqliteDatabase(join(dataDir, 'knode.db'), writable ? {} : { readonly: true });
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
  return { db, close: () => db.destroy() };
}
