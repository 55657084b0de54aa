import { type Kysely, type RawBuilder, sql } from 'kysely';

/**
 * The repositories speak SQL that PostgreSQL understands too (issue 25), so two SQLite-only habits go:
 * - lists ordered "oldest first" broke ties between rows created in the same millisecond by `rowid`, which
 *   PostgreSQL has not. `users`, `datasets`, `models`, `endpoints`, `marketplaces` and `policies` get `seq`,
 *   assigned by the database on insert and increasing (here the table's INTEGER PRIMARY KEY, i.e. the rowid
 *   itself; an identity column in PostgreSQL), and lists order by `created_at, seq`. `id` stays the key
 *   every other table references (NOT NULL UNIQUE, which SQLite accepts as a parent key).
 * - tenant names compared case-insensitively through `COLLATE NOCASE`; now `name_key`, generated as
 *   `lower(name)` (STORED, which PostgreSQL writes the same way) with a unique index, and lookups compare it.
 *
 * Existing rows keep their order (`seq` = their rowid, as migration 0009 kept the rowids of policies) and
 * their uniqueness (SQLite's NOCASE and lower() fold the same letters, ASCII only). SQLite cannot add a
 * primary key or drop a collation in place, so the tables are rebuilt the way SQLite documents it
 * (sqlite.org/lang_altertable.html, "other kinds of table schema changes"): foreign keys off, one
 * transaction, new table, rows copied, old table dropped, new one renamed, indexes made again, the foreign
 * keys checked before committing. With foreign keys on, dropping a parent table would delete (cascade) or
 * refuse (restrict) its children's rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const before = await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(db);
  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await sql`BEGIN IMMEDIATE`.execute(db);
    try {
      await rebuild(db);
      const broken = await sql`PRAGMA foreign_key_check`.execute(db);
      if (broken.rows.length > 0) throw new Error(`foreign keys broken by the rebuild: ${JSON.stringify(broken.rows.slice(0, 5))}`);
      await sql`COMMIT`.execute(db);
    } catch (error) {
      await sql`ROLLBACK`.execute(db);
      throw error;
    }
  } finally {
    if (before.rows[0]?.foreign_keys) await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}

async function rebuild(db: Kysely<unknown>): Promise<void> {
  await replace(
    db,
    'tenants',
    sql`
      CREATE TABLE tenants_new (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        -- what names are compared by: 'Acme' and 'acme' are one tenant
        name_key TEXT NOT NULL GENERATED ALWAYS AS (lower(name)) STORED,
        created_at TEXT NOT NULL,
        ingestion_roots TEXT NOT NULL DEFAULT '[]'
      )`,
    ['id', 'name', 'created_at', 'ingestion_roots'],
    false,
  );
  await sql`CREATE UNIQUE INDEX tenants_name_key ON tenants(name_key)`.execute(db);

  await replace(
    db,
    'users',
    sql`
      CREATE TABLE users_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        email TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,
        created_at TEXT NOT NULL
      )`,
    ['id', 'email', 'password_hash', 'created_at'],
  );

  await replace(
    db,
    'datasets',
    sql`
      CREATE TABLE datasets_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        dtype TEXT NOT NULL,
        configuration TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        error TEXT,
        UNIQUE (tenant_id, name)
      )`,
    ['id', 'tenant_id', 'name', 'summary', 'dtype', 'configuration', 'status', 'created_at', 'updated_at', 'error'],
  );

  await replace(
    db,
    'models',
    sql`
      CREATE TABLE models_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        dtype TEXT NOT NULL,
        configuration TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
    ['id', 'tenant_id', 'name', 'dtype', 'configuration', 'created_at', 'updated_at'],
  );
  await sql`CREATE INDEX models_tenant ON models(tenant_id)`.execute(db);

  await replace(
    db,
    'endpoints',
    sql`
      CREATE TABLE endpoints_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '',
        dataset_id TEXT REFERENCES datasets(id) ON DELETE RESTRICT,
        model_id TEXT REFERENCES models(id) ON DELETE RESTRICT,
        response_type TEXT NOT NULL CHECK (response_type IN ('raw', 'summary', 'both')),
        published INTEGER NOT NULL DEFAULT 0,
        tags TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        generation_defaults TEXT NOT NULL DEFAULT '{}',
        UNIQUE (tenant_id, slug),
        CHECK (dataset_id IS NOT NULL OR model_id IS NOT NULL)
      )`,
    [
      'id',
      'tenant_id',
      'name',
      'slug',
      'description',
      'summary',
      'dataset_id',
      'model_id',
      'response_type',
      'published',
      'tags',
      'created_at',
      'updated_at',
      'generation_defaults',
    ],
  );
  await sql`CREATE INDEX endpoints_dataset ON endpoints(dataset_id)`.execute(db);
  await sql`CREATE INDEX endpoints_model ON endpoints(model_id)`.execute(db);

  await replace(
    db,
    'marketplaces',
    sql`
      CREATE TABLE marketplaces_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        url TEXT NOT NULL,
        username TEXT NOT NULL,
        email TEXT,
        password TEXT NOT NULL,
        is_default INTEGER NOT NULL DEFAULT 0,
        is_active INTEGER NOT NULL DEFAULT 1,
        accounting_url TEXT,
        accounting_email TEXT,
        accounting_password TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        account TEXT,
        satellite_id TEXT,
        satellite_url TEXT,
        UNIQUE (tenant_id, name)
      )`,
    [
      'id',
      'tenant_id',
      'name',
      'url',
      'username',
      'email',
      'password',
      'is_default',
      'is_active',
      'accounting_url',
      'accounting_email',
      'accounting_password',
      'created_at',
      'updated_at',
      'account',
      'satellite_id',
      'satellite_url',
    ],
  );
  await sql`CREATE UNIQUE INDEX marketplaces_account ON marketplaces(account)`.execute(db);
  // At most one default marketplace per tenant, enforced by the database itself.
  await sql`CREATE UNIQUE INDEX marketplaces_one_default ON marketplaces(tenant_id) WHERE is_default = 1`.execute(db);

  await replace(
    db,
    'policies',
    sql`
      CREATE TABLE policies_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        policy_type TEXT NOT NULL CHECK (policy_type IN ('access', 'rate_limit', 'accounting', 'mpp')),
        configuration TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
    ['id', 'tenant_id', 'endpoint_id', 'name', 'policy_type', 'configuration', 'created_at', 'updated_at'],
  );
  await sql`CREATE INDEX policies_endpoint ON policies(endpoint_id)`.execute(db);
  await sql`CREATE INDEX policies_tenant ON policies(tenant_id)`.execute(db);
}

/**
 * Creates `<table>_new`, copies the rows (their rowid becoming `seq` when `ordered`), drops the old table
 * and gives the new one its name. The old table's indexes go with it; the caller makes them again.
 */
async function replace(
  db: Kysely<unknown>,
  table: string,
  create: RawBuilder<unknown>,
  columns: readonly string[],
  ordered = true,
): Promise<void> {
  const fresh = `${table}_new`;
  await create.execute(db);
  const copied = sql.join(columns.map((column) => sql.ref(column)));
  if (ordered) {
    await sql`INSERT INTO ${sql.table(fresh)} (seq, ${copied}) SELECT rowid, ${copied} FROM ${sql.table(table)}`.execute(db);
  } else {
    await sql`INSERT INTO ${sql.table(fresh)} (${copied}) SELECT ${copied} FROM ${sql.table(table)}`.execute(db);
  }
  await sql`DROP TABLE ${sql.table(table)}`.execute(db);
  await sql`ALTER TABLE ${sql.table(fresh)} RENAME TO ${sql.table(table)}`.execute(db);
}
