import { countRows } from '../db/counts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { insertWithinQuota } from '../db/quotas.ts';
import { type Window, windowed } from '../db/windows.ts';
import { ENDPOINT_COLUMNS, type EndpointRecord, endpointCodec } from './codec.ts';

export class EndpointRepository {
  constructor(private readonly db: DbOrTransaction) {}

  /** Inserts the record while its tenant holds fewer than `limit` endpoints (0: no limit; db/quotas.ts). */
  async insert(record: EndpointRecord, limit = 0): Promise<void> {
    await insertWithinQuota(this.db, { quota: 'endpoints', limit, column: 'tenant_id', owner: record.tenant_id }, (db) =>
      db.insertInto('endpoints').values(endpointCodec.toRow(record)).execute(),
    );
  }

  /** The tenant's endpoints, oldest first; with a window, only those rows. */
  async list(tenantId: string, window?: Window): Promise<EndpointRecord[]> {
    const query = this.db
      .selectFrom('endpoints')
      .select(ENDPOINT_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .orderBy('created_at')
      .orderBy('seq');
    return (await windowed(query, window).execute()).map(endpointCodec.toRecord);
  }

  count(tenantId: string): Promise<number> {
    return countRows(this.db, 'endpoints', { tenant_id: tenantId });
  }

  async getBySlug(tenantId: string, slug: string): Promise<EndpointRecord | undefined> {
    const row = await this.db
      .selectFrom('endpoints')
      .select(ENDPOINT_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where('slug', '=', slug)
      .executeTakeFirst();
    return row && endpointCodec.toRecord(row);
  }

  async getById(tenantId: string, id: string): Promise<EndpointRecord | undefined> {
    const row = await this.db
      .selectFrom('endpoints')
      .select(ENDPOINT_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && endpointCodec.toRecord(row);
  }

  async update(
    tenantId: string,
    id: string,
    changes: Partial<Pick<EndpointRecord, 'name' | 'summary' | 'description' | 'published' | 'generation_defaults' | 'updated_at'>>,
  ): Promise<void> {
    const { published, generation_defaults, ...columns } = changes;
    await this.db
      .updateTable('endpoints')
      .set({
        ...columns,
        ...(published === undefined ? {} : { published: published ? 1 : 0 }),
        ...(generation_defaults === undefined ? {} : { generation_defaults: JSON.stringify(generation_defaults) }),
      })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .execute();
  }

  /** Deletes the endpoint; its policies and marketplace links go with it (ON DELETE CASCADE). */
  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('endpoints').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** Records that the endpoint is published to the marketplace (both must belong to the tenant). */
  async addPublication(tenantId: string, endpointId: string, marketplaceId: string, publishedAt: string): Promise<void> {
    await this.db
      .insertInto('endpoint_marketplaces')
      .columns(['endpoint_id', 'marketplace_id', 'published_at'])
      .expression((eb) =>
        eb
          .selectFrom('endpoints')
          .innerJoin('marketplaces', (join) => join.onRef('marketplaces.tenant_id', '=', 'endpoints.tenant_id'))
          .select((select) => [
            'endpoints.id as endpoint_id',
            'marketplaces.id as marketplace_id',
            select.val(publishedAt).as('published_at'),
          ])
          .where('endpoints.tenant_id', '=', tenantId)
          .where('endpoints.id', '=', endpointId)
          .where('marketplaces.id', '=', marketplaceId),
      )
      .onConflict((oc) => oc.columns(['endpoint_id', 'marketplace_id']).doNothing())
      .execute();
  }

  async removePublication(tenantId: string, endpointId: string, marketplaceId: string): Promise<void> {
    await this.db
      .deleteFrom('endpoint_marketplaces')
      .where('endpoint_id', '=', endpointId)
      .where('marketplace_id', '=', marketplaceId)
      .where('endpoint_id', 'in', (eb) => eb.selectFrom('endpoints').select('id').where('tenant_id', '=', tenantId))
      .execute();
  }

  /** The tenant's endpoints published to a marketplace, oldest first. */
  async listPublishedTo(tenantId: string, marketplaceId: string): Promise<EndpointRecord[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .innerJoin('endpoint_marketplaces', 'endpoint_marketplaces.endpoint_id', 'endpoints.id')
      .select(ENDPOINT_COLUMNS.map((column) => `endpoints.${column}` as const))
      .where('endpoints.tenant_id', '=', tenantId)
      .where('endpoint_marketplaces.marketplace_id', '=', marketplaceId)
      .orderBy('endpoints.created_at')
      .orderBy('endpoints.seq')
      .execute();
    return rows.map(endpointCodec.toRecord);
  }

  /** Ids of the tenants that have published something (start-up sync and heartbeats visit only them). */
  async tenantsWithPublications(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .innerJoin('endpoint_marketplaces', 'endpoint_marketplaces.endpoint_id', 'endpoints.id')
      .select('endpoints.tenant_id')
      .distinct()
      .execute();
    return rows.map((row) => row.tenant_id);
  }

  /** The marketplaces each endpoint is published to (its `published_to`). */
  async publishedTo(endpointIds: string[]): Promise<Map<string, string[]>> {
    const result = new Map<string, string[]>();
    if (endpointIds.length === 0) return result;
    const rows = await this.db
      .selectFrom('endpoint_marketplaces')
      .select(['endpoint_id', 'marketplace_id'])
      .where('endpoint_id', 'in', endpointIds)
      .orderBy('published_at')
      .execute();
    for (const row of rows) {
      const list = result.get(row.endpoint_id) ?? [];
      list.push(row.marketplace_id);
      result.set(row.endpoint_id, list);
    }
    return result;
  }
}
