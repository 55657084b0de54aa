import { Database as SqliteDatabase } from 'bun:sqlite';
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import { isUniqueViolation, kyselyAdapter, openDatabase } from '../src/db/database.ts';
import { migrations } from '../src/db/migrations/index.ts';
import { EndpointRepository } from '../src/endpoints/repository.ts';
import { MarketplaceRepository } from '../src/marketplaces/repository.ts';
import { PolicyRepository } from '../src/policies/repository.ts';
import { TenantRepository } from '../src/tenants/repository.ts';

/**
 * Migration 0015 (issue 25): lists keep the order rows were inserted in without SQLite's rowid, and tenant
 * names stay unique case-insensitively without COLLATE NOCASE. A data folder of the previous release
 * upgrades with the same order, the same uniqueness, and every row that referenced the rebuilt tables.
 */
describe('upgrading to explicit insertion order and tenant name keys', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'knode-upgrade-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  // Inserted in this order, all in the same millisecond, with ids that sort the other way round.
  const SAME_TIME = '2026-01-01T00:00:00.000Z';
  const ids = (prefix: string) => [`${prefix}-z`, `${prefix}-m`, `${prefix}-a`];

  test('rows of one millisecond keep their order, names their uniqueness, and references their rows', async () => {
    const sqlite = new SqliteDatabase(join(dataDir, 'knode.db'), { create: true });
    const legacy = new Kysely<unknown>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= '0014'));
    expect((await new Migrator({ db: legacy, provider: { getMigrations: async () => before } }).migrateToLatest()).error).toBeUndefined();
    const run = (statement: string) => sqlite.run(statement);
    run(`INSERT INTO tenants (id, name, created_at) VALUES ('t', 'Acme', '${SAME_TIME}'), ('t2', 'other', '${SAME_TIME}')`);
    for (const id of ids('u')) {
      run(`INSERT INTO users (id, email, password_hash, created_at) VALUES ('${id}', '${id}@example.org', 'h', '${SAME_TIME}')`);
    }
    run(`INSERT INTO tenant_members (tenant_id, user_id, role, created_at) VALUES ('t2', 'u-a', 'owner', '${SAME_TIME}')`);
    run(`INSERT INTO tenant_members (tenant_id, user_id, role, created_at) VALUES ('t', 'u-z', 'owner', '${SAME_TIME}')`);
    for (const [index, id] of ids('d').entries()) {
      run(`INSERT INTO datasets (id, tenant_id, name, dtype, configuration, status, created_at, updated_at)
           VALUES ('${id}', 't', 'dataset ${index}', 'local_file', '{}', 'stopped', '${SAME_TIME}', '${SAME_TIME}')`);
    }
    run(`INSERT INTO dataset_files (dataset_id, path, status, updated_at) VALUES ('d-m', 'a.txt', 'indexed', '${SAME_TIME}')`);
    for (const [index, id] of ids('m').entries()) {
      run(`INSERT INTO models (id, tenant_id, name, dtype, configuration, created_at, updated_at)
           VALUES ('${id}', 't', 'model ${index}', 'openai', '{}', '${SAME_TIME}', '${SAME_TIME}')`);
    }
    for (const [index, id] of ids('e').entries()) {
      run(`INSERT INTO endpoints (id, tenant_id, name, slug, dataset_id, model_id, response_type, created_at, updated_at)
           VALUES ('${id}', 't', 'endpoint ${index}', 'slug-${index}', 'd-a', 'm-z', 'both', '${SAME_TIME}', '${SAME_TIME}')`);
    }
    for (const [index, id] of ids('k').entries()) {
      run(`INSERT INTO marketplaces (id, tenant_id, name, url, username, password, is_default, account, created_at, updated_at)
           VALUES ('${id}', 't', 'hub ${index}', 'https://hub${index}.example.org', 'acme', 'sealed', ${index === 1 ? 1 : 0},
                   'https://hub${index}.example.org acme', '${SAME_TIME}', '${SAME_TIME}')`);
    }
    run(`INSERT INTO endpoint_marketplaces (endpoint_id, marketplace_id, published_at) VALUES ('e-m', 'k-a', '${SAME_TIME}')`);
    for (const [index, id] of ids('p').entries()) {
      run(`INSERT INTO policies (id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at)
           VALUES ('${id}', 't', 'e-z', 'policy ${index}', 'access', '{}', '${SAME_TIME}', '${SAME_TIME}')`);
    }
    run(
      `INSERT INTO query_usage (tenant_id, endpoint_id, sender_email, status, created_at) VALUES ('t', 'e-a', 'x@example.org', 'success', '${SAME_TIME}')`,
    );
    await legacy.destroy();

    const database = await openDatabase(dataDir);
    try {
      const { db } = database;
      expect((await new EndpointRepository(db).list('t')).map((row) => row.id)).toEqual(ids('e'));
      expect((await new MarketplaceRepository(db).list('t')).map((row) => row.id)).toEqual(ids('k'));
      expect((await new PolicyRepository(db).list('t')).map((row) => row.id)).toEqual(ids('p'));
      for (const table of ['datasets', 'models'] as const) {
        const rows = await db.selectFrom(table).select('id').where('tenant_id', '=', 't').orderBy('created_at').orderBy('seq').execute();
        expect(rows.map((row) => row.id)).toEqual(ids(table[0] ?? ''));
      }
      // The first user who registered (u-z, owner of t) is still the first, though u-a's id sorts before.
      const tenants = new TenantRepository(db);
      expect(await tenants.firstOwnersTenantId()).toBe('t');

      // Names compare case-insensitively, and stay unique that way.
      expect((await tenants.findByName('ACME'))?.id).toBe('t');
      expect((await tenants.ensure('acme')).id).toBe('t');
      const clash = await tenants.create('OTHER').catch((error: unknown) => error);
      expect(isUniqueViolation(clash)).toBe(true);

      // Every row that referenced a rebuilt table is there, and the foreign keys hold again.
      const counts = await sql<{ files: number; links: number; members: number; usage: number; markets: number }>`
        SELECT (SELECT count(*) FROM dataset_files) AS files, (SELECT count(*) FROM endpoint_marketplaces) AS links,
               (SELECT count(*) FROM tenant_members) AS members, (SELECT count(*) FROM query_usage) AS usage,
               (SELECT count(*) FROM marketplaces WHERE is_default = 1) AS markets`.execute(db);
      expect(counts.rows[0]).toEqual({ files: 1, links: 1, members: 2, usage: 1, markets: 1 });
      expect((await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(db)).rows[0]?.foreign_keys).toBe(1);
      const restricted = await db
        .deleteFrom('datasets')
        .where('id', '=', 'd-a')
        .execute()
        .catch((error: unknown) => error);
      expect(restricted).toBeInstanceOf(Error);
      await db.deleteFrom('endpoints').where('id', '=', 'e-z').execute();
      expect(await new PolicyRepository(db).count('t')).toBe(0);

      // A row inserted after the upgrade comes after the others of its millisecond.
      await db
        .insertInto('models')
        .values({
          id: 'm-0',
          tenant_id: 't',
          name: 'new',
          dtype: 'openai',
          configuration: '{}',
          created_at: SAME_TIME,
          updated_at: SAME_TIME,
        })
        .execute();
      const models = await db.selectFrom('models').select('id').orderBy('created_at').orderBy('seq').execute();
      expect(models.map((row) => row.id)).toEqual([...ids('m'), 'm-0']);
    } finally {
      await database.close();
    }
  });
});
