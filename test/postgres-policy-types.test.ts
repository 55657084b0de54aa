import { describe, expect, test } from 'bun:test';
import { sql } from 'kysely';
import { openPostgresDatabase } from '../src/db/postgres/database.ts';
import { startPostgres } from './helpers/postgres.ts';

/** The pii_filter policy type in cluster mode's database (on SQLite and through the API: pii-filter.test.ts). */
describe('the pii_filter policy type on PostgreSQL', () => {
  test("PostgreSQL's policies table takes it (migration 0004), as SQLite's does (0017), and still refuses an unknown type", async () => {
    const postgres = await startPostgres();
    const opened = await openPostgresDatabase(postgres.url);
    try {
      const at = new Date().toISOString();
      await opened.db.insertInto('tenants').values({ id: 't1', name: 'acme', created_at: at }).execute();
      await sql`INSERT INTO models (id, tenant_id, name, dtype, configuration, created_at, updated_at)
        VALUES ('m1', 't1', 'm', 'openai', '{}', ${at}, ${at})`.execute(opened.db);
      await sql`INSERT INTO endpoints (id, tenant_id, name, slug, model_id, response_type, created_at, updated_at)
        VALUES ('e1', 't1', 'e', 'e', 'm1', 'summary', ${at}, ${at})`.execute(opened.db);
      const insert = (id: string, type: string) =>
        sql`INSERT INTO policies (id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at)
          VALUES (${id}, 't1', 'e1', 'p', ${type}, '{}', ${at}, ${at})`.execute(opened.db);
      await insert('p1', 'pii_filter');
      expect(await insert('p2', 'telepathy').catch((error: unknown) => String(error))).toContain('policies_policy_type_check');
    } finally {
      await opened.close();
      await postgres.stop();
    }
  }, 60_000);
});
