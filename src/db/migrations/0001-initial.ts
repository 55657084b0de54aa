import { type Kysely, sql } from 'kysely';

// Migrations are frozen once released: add a new file rather than editing this one.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE tenants (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE COLLATE NOCASE,
      created_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE users (
      id TEXT PRIMARY KEY,
      email TEXT NOT NULL UNIQUE,
      password_hash TEXT NOT NULL,
      created_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE tenant_members (
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      role TEXT NOT NULL CHECK (role IN ('owner', 'member')),
      created_at TEXT NOT NULL,
      PRIMARY KEY (tenant_id, user_id)
    )`.execute(db);
  await sql`CREATE INDEX tenant_members_user ON tenant_members(user_id)`.execute(db);
  await sql`
    CREATE TABLE datasets (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      summary TEXT NOT NULL DEFAULT '',
      dtype TEXT NOT NULL,
      configuration TEXT NOT NULL,
      status TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (tenant_id, name)
    )`.execute(db);
  // One row per file of a dataset's folder: what the ingestion knows of it (API-CONTRACT 4, files route).
  await sql`
    CREATE TABLE dataset_files (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      path TEXT NOT NULL,
      content_hash TEXT,
      size INTEGER NOT NULL DEFAULT 0,
      mtime_ms INTEGER NOT NULL DEFAULT 0,
      status TEXT NOT NULL CHECK (status IN ('queued', 'indexing', 'indexed', 'failed', 'removed')),
      chunks INTEGER NOT NULL DEFAULT 0,
      error TEXT,
      -- bumped by every change seen on disk: work started on an older generation is thrown away
      generation INTEGER NOT NULL DEFAULT 0,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (dataset_id, path)
    )`.execute(db);
  await sql`CREATE INDEX dataset_files_status ON dataset_files(dataset_id, status)`.execute(db);
  await sql`
    CREATE TABLE models (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      dtype TEXT NOT NULL,
      configuration TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX models_tenant ON models(tenant_id)`.execute(db);
  await sql`
    CREATE TABLE endpoints (
      id TEXT PRIMARY KEY,
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
      UNIQUE (tenant_id, slug),
      CHECK (dataset_id IS NOT NULL OR model_id IS NOT NULL)
    )`.execute(db);
  await sql`CREATE INDEX endpoints_dataset ON endpoints(dataset_id)`.execute(db);
  await sql`CREATE INDEX endpoints_model ON endpoints(model_id)`.execute(db);
  await sql`
    CREATE TABLE marketplaces (
      id TEXT PRIMARY KEY,
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
      UNIQUE (tenant_id, name)
    )`.execute(db);
  // At most one default marketplace per tenant, enforced by the database itself.
  await sql`CREATE UNIQUE INDEX marketplaces_one_default ON marketplaces(tenant_id) WHERE is_default = 1`.execute(db);
  await sql`
    CREATE TABLE endpoint_marketplaces (
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      marketplace_id TEXT NOT NULL REFERENCES marketplaces(id) ON DELETE CASCADE,
      published_at TEXT NOT NULL,
      PRIMARY KEY (endpoint_id, marketplace_id)
    )`.execute(db);
  await sql`
    CREATE TABLE policies (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
      endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      policy_type TEXT NOT NULL CHECK (policy_type IN ('access', 'rate_limit', 'accounting')),
      configuration TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX policies_endpoint ON policies(endpoint_id)`.execute(db);
  await sql`CREATE INDEX policies_tenant ON policies(tenant_id)`.execute(db);
  await sql`
    CREATE TABLE tenant_settings (
      tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
      public_url TEXT,
      updated_at TEXT NOT NULL
    )`.execute(db);
  await sql`
    CREATE TABLE rate_windows (
      key TEXT NOT NULL,
      window_start INTEGER NOT NULL,
      count INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (key, window_start)
    ) WITHOUT ROWID`.execute(db);
}
