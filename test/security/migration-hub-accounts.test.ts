import { Database as SqliteDatabase } from 'bun:sqlite';
import { afterAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import { kyselyAdapter, openDatabase } from '../../src/db/database.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { tempDir } from '../helpers/app.ts';

/**
 * Issue 11, item 1, for a database that already holds the takeover: two tenants' records of one hub
 * account. Upgrading keeps the oldest active and deactivates the others, so none of them can vouch
 * for that account's tokens until its owner proves the account is free again (409 otherwise).
 */
describe('security: upgrading a database where two tenants hold one hub account', () => {
  const dataDir = tempDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('the oldest record keeps the account; the later duplicates are deactivated, other records untouched', async () => {
    // The database as the previous release left it: migrations up to 0004.
    const sqlite = new SqliteDatabase(join(dataDir, 'knode.db'), { create: true });
    const legacy = new Kysely<unknown>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
    const legacyMigrations = Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= '0004'));
    await new Migrator({ db: legacy, provider: { getMigrations: async () => legacyMigrations } }).migrateToLatest();
    await sql`INSERT INTO tenants (id, name, created_at) VALUES ('t-victim', 'victim', '2026-01-01T00:00:00Z'), ('t-other', 'other', '2026-01-01T00:00:00Z')`.execute(
      legacy,
    );
    const insert = (id: string, tenant: string, url: string, username: string, createdAt: string) =>
      sql`INSERT INTO marketplaces (id, tenant_id, name, url, username, password, is_default, is_active, created_at, updated_at)
          VALUES (${id}, ${tenant}, ${id}, ${url}, ${username}, 'sealed', 0, 1, ${createdAt}, ${createdAt})`.execute(legacy);
    await insert('first', 't-victim', 'https://hub.example.org', 'victim', '2026-01-01T00:00:01Z');
    await insert('copy', 't-other', 'HTTPS://Hub.Example.org/', 'VICTIM', '2026-01-01T00:00:02Z');
    await insert('unrelated', 't-other', 'https://hub.example.org', 'someone-else', '2026-01-01T00:00:03Z');
    await legacy.destroy();

    const database = await openDatabase(dataDir);
    try {
      const rows = await database.db.selectFrom('marketplaces').select(['id', 'is_active', 'account']).orderBy('created_at').execute();
      expect(rows).toEqual([
        { id: 'first', is_active: 1, account: 'https://hub.example.org victim' },
        { id: 'copy', is_active: 0, account: null },
        { id: 'unrelated', is_active: 1, account: 'https://hub.example.org someone-else' },
      ]);
    } finally {
      await database.close();
    }
  });
});
