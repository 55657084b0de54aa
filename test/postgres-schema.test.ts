import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import type { OpenedDatabase } from '../src/db/database.ts';
import { NewerSchemaError } from '../src/db/migrate.ts';
import { describeUrl, type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { postgresMigrations } from '../src/db/postgres/migrations/index.ts';
import { startupFailure } from '../src/startup.ts';
import { PostgresVectorStore } from '../src/vectors/postgres/store.ts';
import { openPostgresAndSqlite, type PostgresAndSqlite, type PrivatePostgres } from './helpers/postgres.ts';

/**
 * Tables of SQLite's schema that the PostgreSQL control schema leaves out on purpose: the vector store's
 * (the PostgreSQL VectorStore brings its own), and the bookkeeping of the two engines. Any other table a
 * SQLite migration adds must exist on PostgreSQL too, with the same columns.
 */
const STORE_TABLES = ['vector_indexes', 'vector_chunks', 'vector_sets', 'vector_row_counter'];
const BOOKKEEPING = ['kysely_migration', 'kysely_migration_lock', 'sqlite_sequence'];
/**
 * Tables only cluster mode has: what replicas coordinate through (leases and the change log of
 * src/coordination/postgres/), which a single SQLite node keeps in memory. Listed one by one: any other
 * table on PostgreSQL alone fails the comparison.
 */
const CLUSTER_ONLY = ['change_log', 'coordination_leases', 'embedding_probes', 'embedding_windows'];

/** What a column is, in words both engines can be described in. */
interface ColumnShape {
  type: 'text' | 'integer' | 'real';
  notNull: boolean;
  default: string | null;
  generated: boolean;
}

let engines: PostgresAndSqlite;
let postgres: PrivatePostgres;
let pg: OpenedPostgres;
let sqlite: OpenedDatabase;

beforeAll(async () => {
  engines = await openPostgresAndSqlite('knode-schema-');
  ({ postgres, pg, sqlite } = engines);
});

afterAll(async () => {
  await engines?.close();
});

async function sqliteTables(): Promise<string[]> {
  return sqlite.exclusive((db) =>
    db
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => row.name)
      .filter((name) => !STORE_TABLES.includes(name) && !BOOKKEEPING.includes(name)),
  );
}

async function postgresTables(): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(pg.db);
  return rows.map((row) => row.name).filter((name) => !BOOKKEEPING.includes(name));
}

/** A default as written, without PostgreSQL's casts: `'[]'::text` and `'[]'` are the same default. */
function plainDefault(value: string | null): string | null {
  return value === null ? null : value.replace(/::[a-z ]+$/, '');
}

async function sqliteColumns(table: string): Promise<Record<string, ColumnShape>> {
  return sqlite.exclusive((db) => {
    const rows = db
      .query<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number; hidden: number }, []>(
        `PRAGMA table_xinfo(${table})`,
      )
      .all();
    return Object.fromEntries(
      rows.map((row) => {
        const generated = row.hidden === 2 || row.hidden === 3;
        // SQLite's declared type can carry the generated expression's words ("TEXT GENERATED ALWAYS"...).
        const declared = row.type.split(' ')[0]?.toUpperCase();
        const type = declared === 'INTEGER' ? 'integer' : declared === 'REAL' ? 'real' : 'text';
        // An INTEGER PRIMARY KEY is the rowid: never null, though table_xinfo says notnull 0.
        return [row.name, { type, notNull: row.notnull === 1 || row.pk > 0, default: row.dflt_value, generated }];
      }),
    );
  });
}

async function postgresColumns(table: string): Promise<Record<string, ColumnShape>> {
  const { rows } = await sql<{
    name: string;
    data_type: string;
    is_nullable: string;
    column_default: string | null;
    is_generated: string;
    is_identity: string;
  }>`
    SELECT column_name AS name, data_type, is_nullable, column_default, is_generated, is_identity
    FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table}`.execute(pg.db);
  return Object.fromEntries(
    rows.map((row) => {
      const type = ['bigint', 'integer'].includes(row.data_type) ? 'integer' : row.data_type === 'double precision' ? 'real' : 'text';
      return [
        row.name,
        { type, notNull: row.is_nullable === 'NO', default: plainDefault(row.column_default), generated: row.is_generated === 'ALWAYS' },
      ];
    }),
  );
}

/** Each unique key as its columns (`a,b`), a partial one with ` (partial)`: the primary key first. */
async function sqliteUniqueKeys(table: string): Promise<string[]> {
  return sqlite.exclusive((db) => {
    const indexes = db.query<{ name: string; unique: number; origin: string; partial: number }, []>(`PRAGMA index_list(${table})`).all();
    const keys = indexes
      .filter((index) => index.unique === 1)
      .map((index) => {
        const columns = db
          .query<{ name: string }, []>(`PRAGMA index_info(${JSON.stringify(index.name)})`)
          .all()
          .map((column) => column.name);
        return `${columns.join(',')}${index.partial ? ' (partial)' : ''}`;
      });
    // An INTEGER PRIMARY KEY has no index of its own: it is the rowid.
    const pk = db
      .query<{ name: string; pk: number }, []>(`PRAGMA table_info(${table})`)
      .all()
      .filter((column) => column.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((column) => column.name)
      .join(',');
    if (pk && !keys.includes(pk)) keys.push(pk);
    return keys.sort();
  });
}

async function postgresUniqueKeys(table: string): Promise<string[]> {
  const { rows } = await sql<{ columns: string; partial: boolean }>`
    SELECT string_agg(a.attname, ',' ORDER BY k.ordinality) AS columns, i.indpred IS NOT NULL AS partial
    FROM pg_index i
    JOIN pg_class t ON t.oid = i.indrelid
    CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ordinality)
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
    WHERE t.relname = ${table} AND t.relnamespace = current_schema()::regnamespace AND i.indisunique
    GROUP BY i.indexrelid, i.indpred`.execute(pg.db);
  return rows.map((row) => `${row.columns}${row.partial ? ' (partial)' : ''}`).sort();
}

/** The URL of a new, empty database `name` on the test's server. */
async function newDatabase(name: string): Promise<string> {
  const admin = await openPostgresDatabase(postgres.url);
  try {
    await sql.raw(`CREATE DATABASE ${name}`).execute(admin.db);
  } finally {
    await admin.close();
  }
  return postgres.url.replace(/\/knode$/, `/${name}`);
}

describe('the control schema on PostgreSQL', () => {
  test("has SQLite's control tables and the cluster's own, and only those", async () => {
    const expected = await sqliteTables();
    expect(expected).toContain('tenants');
    expect(expected).toContain('payment_settlements');
    expect(await postgresTables()).toEqual([...expected, ...CLUSTER_ONLY].sort());
  });

  test('each table has the same columns: names, types, nullability, defaults, generated columns', async () => {
    for (const table of await sqliteTables()) {
      const expected = await sqliteColumns(table);
      const actual = await postgresColumns(table);
      expect({ table, columns: actual }).toEqual({ table, columns: expected });
    }
  });

  test('each table has the same unique keys (primary keys included)', async () => {
    for (const table of await sqliteTables()) {
      expect({ table, keys: await postgresUniqueKeys(table) }).toEqual({ table, keys: await sqliteUniqueKeys(table) });
    }
  });

  test('opening the same database again migrates nothing and keeps the rows', async () => {
    await pg.db.insertInto('tenants').values({ id: 't1', name: 'Acme', created_at: new Date().toISOString() }).execute();
    const again = await openPostgresDatabase(postgres.url);
    try {
      const rows = await again.db.selectFrom('tenants').select(['id', 'name', 'name_key']).execute();
      expect(rows).toEqual([{ id: 't1', name: 'Acme', name_key: 'acme' }]);
    } finally {
      await again.close();
    }
  });

  test('two replicas opening a new database at once migrate it once', async () => {
    const url = await newDatabase('replicas');
    const replicas = await Promise.all([openPostgresDatabase(url), openPostgresDatabase(url)]);
    try {
      const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(replicas[0].db);
      expect(rows.map((row) => row.name)).toEqual(Object.keys(postgresMigrations));
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });

  test('a database a newer knode migrated is refused in one line saying so, for the control tables and the vector store', async () => {
    const url = await newDatabase('newer');
    const first = await openPostgresDatabase(url);
    try {
      await (await PostgresVectorStore.open(first.db)).close();
      const at = new Date().toISOString();
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999-from-a-newer-knode', ${at})`.execute(first.db);
      await sql`INSERT INTO vector_store_migrations (name, timestamp) VALUES ('9999-from-a-newer-knode', ${at})`.execute(first.db);
      const refused = await PostgresVectorStore.open(first.db).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(NewerSchemaError);
      expect((refused as Error).message).toBe(
        "the vector store's tables was last opened by a newer knode (its migration 9999-from-a-newer-knode is unknown to this one): run that version of knode or a newer one",
      );
    } finally {
      await first.close();
    }
    const error = await openPostgresDatabase(url).catch((failure: unknown) => failure);
    expect((error as Error).message).toMatch(
      /^PostgreSQL at .+ was last opened by a newer knode \(its migration 9999-from-a-newer-knode is unknown/,
    );
    expect(startupFailure(error, loadConfig({}))).toBe((error as Error).message);
  });

  test('an unreachable server is a start-up error naming it, never its password', async () => {
    const unreachable = `postgres://knode:secret-password@127.0.0.1:${postgres.port + 1}/knode`;
    const error = await openPostgresDatabase(unreachable, { connectTimeoutSeconds: 2 }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`PostgreSQL at knode@127.0.0.1:${postgres.port + 1}/knode cannot be reached`);
    expect(message).not.toContain('secret-password');
    expect(describeUrl('postgres://u:p@db.example:5433/x?sslmode=require')).toBe('u@db.example:5433/x');
  });
});
