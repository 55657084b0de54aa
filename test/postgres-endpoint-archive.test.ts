import { describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { DatasetRepository } from '../src/datasets/repository.ts';
import { type DbOrTransaction, openDatabase } from '../src/db/database.ts';
import { openPostgresDatabase } from '../src/db/postgres/database.ts';
import { EndpointRepository } from '../src/endpoints/repository.ts';
import { SecretBox } from '../src/security/secret-box.ts';
import { TenantRepository } from '../src/tenants/repository.ts';
import { tempDir } from './helpers/app.ts';
import { startPostgres } from './helpers/postgres.ts';
import { datasetRecord, endpointRecord, marketplaceRow } from './helpers/records.ts';

/**
 * The archive's SQL, the same calls on both engines (the repositories run on PostgreSQL too, cluster mode): the list
 * filter and its count, the links kept with when each hub took the endpoint off, a link published again, and the
 * links the heartbeats settle.
 */
describe('the archive in the endpoint repository, on SQLite and on PostgreSQL', () => {
  async function exercise(db: DbOrTransaction): Promise<void> {
    const tenant = await new TenantRepository(db).create(`archive-${crypto.randomUUID().slice(0, 8)}`);
    const endpoints = new EndpointRepository(db);
    const at = '2026-01-01T00:00:00.000Z';
    const datasetId = crypto.randomUUID();
    await new DatasetRepository(db, new SecretBox(Buffer.alloc(32, 7))).insert(datasetRecord(tenant.id, 'docs', at, { id: datasetId }));
    const ids: string[] = [];
    for (const slug of ['first', 'second']) {
      const id = crypto.randomUUID();
      ids.push(id);
      await endpoints.insert(endpointRecord(tenant.id, slug, datasetId, at, { id, published: true }));
    }
    const [first, second] = ids as [string, string];
    const account = marketplaceRow(tenant.id, tenant.name, at);
    const marketplaceId = account.id;
    await db.insertInto('marketplaces').values(account).execute();
    for (const id of ids) await endpoints.addPublication(tenant.id, id, marketplaceId, at);

    await endpoints.update(tenant.id, first, { archived_at: at });
    expect((await endpoints.getById(tenant.id, first))?.archived_at).toBe(at);
    expect((await endpoints.getById(tenant.id, second))?.archived_at).toBeUndefined();
    expect((await endpoints.list(tenant.id, undefined, 'true')).map((row) => row.slug)).toEqual(['first']);
    expect((await endpoints.list(tenant.id, undefined, 'false')).map((row) => row.slug)).toEqual(['second']);
    expect((await endpoints.list(tenant.id, { skip: 0, limit: 1 }, 'all')).map((row) => row.slug)).toEqual(['first']);
    expect([await endpoints.count(tenant.id, 'true'), await endpoints.count(tenant.id, 'false'), await endpoints.count(tenant.id)]).toEqual(
      [1, 1, 2],
    );
    // Archived: on no marketplace, but its link is remembered, unsettled until the hub takes it off.
    expect(await endpoints.publishedTo(ids)).toEqual(new Map([[second, [marketplaceId]]]));
    expect((await endpoints.listPublishedTo(tenant.id, marketplaceId)).map((row) => row.slug)).toEqual(['second']);
    expect(await endpoints.remembered(tenant.id, first)).toEqual([{ marketplace_id: marketplaceId, withdrawn_at: null }]);
    const mine = async () => (await endpoints.unsettledPublications()).filter((link) => link.tenant_id === tenant.id);
    expect(await mine()).toEqual([{ tenant_id: tenant.id, endpoint_id: first, marketplace_id: marketplaceId }]);
    await endpoints.setWithdrawn(tenant.id, first, marketplaceId, at);
    expect(await mine()).toEqual([]);
    // Unarchived: unsettled again until it is published there again (which lists the link again).
    await endpoints.update(tenant.id, first, { archived_at: null });
    expect((await mine()).map((link) => link.endpoint_id)).toEqual([first]);
    await endpoints.addPublication(tenant.id, first, marketplaceId, at);
    expect(await endpoints.remembered(tenant.id, first)).toEqual([{ marketplace_id: marketplaceId, withdrawn_at: null }]);
    expect(await mine()).toEqual([]);
    expect(await endpoints.tenantsWithPublications()).toContain(tenant.id);
  }

  test('SQLite', async () => {
    const dir = tempDir();
    const opened = await openDatabase(dir);
    try {
      await exercise(opened.db);
    } finally {
      await opened.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL', async () => {
    const postgres = await startPostgres();
    const opened = await openPostgresDatabase(postgres.url);
    try {
      await exercise(opened.db);
    } finally {
      await opened.close();
      await postgres.stop();
    }
  }, 60_000);
});
