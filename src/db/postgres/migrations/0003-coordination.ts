import { type Kysely, sql } from 'kysely';

/**
 * What replicas coordinate through (cluster mode only: a single SQLite node has nobody to coordinate with,
 * and its counterparts in src/coordination/ keep this in memory; test/postgres-schema.test.ts lists these
 * two tables as PostgreSQL's own).
 *
 * - `coordination_leases`: one row per named resource (`dataset:<id>`, `singleton:heartbeats`...), held by
 *   one replica until `expires_at`, judged by the server's clock alone so that replicas' clocks may
 *   differ. `token` is the fencing token: one more at every acquisition, so a write checked against it is
 *   refused once another replica took over. Rows are never deleted (a deleted row would start again at 1).
 * - `change_log`: changes one replica announces to the others (a dataset stopped, a marketplace changed),
 *   written in the transaction of the change. Readers follow `seq`; writers take an advisory lock before
 *   inserting so that seq order is commit order (a reader that saw seq 12 can never see 11 later).
 *   `payload` is JSON text, as in the control tables.
 *
 * Frozen once released: add a new file rather than editing this one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE coordination_leases (
      name TEXT PRIMARY KEY,
      holder TEXT NOT NULL,
      token BIGINT NOT NULL,
      acquired_at TIMESTAMPTZ NOT NULL,
      expires_at TIMESTAMPTZ NOT NULL
    )`.execute(db);

  await sql`
    CREATE TABLE change_log (
      seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      kind TEXT NOT NULL,
      payload TEXT NOT NULL DEFAULT '{}',
      created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
    )`.execute(db);
  await sql`CREATE INDEX change_log_created_at ON change_log(created_at)`.execute(db);
}
