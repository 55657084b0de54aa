import { countRows } from '../db/counts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { insertWithinQuota } from '../db/quotas.ts';
import { type Window, windowed } from '../db/windows.ts';
import { ENDPOINT_COLUMNS, type EndpointRecord, endpointCodec } from './codec.ts';

/** Which endpoints a list shows (`GET /endpoints/?archived=`): those not archived unless asked. */
export type ArchivedFilter = 'true' | 'false' | 'all';

/** A marketplace an endpoint is linked to, and whether that marketplace took the archived endpoint off. */
export interface RememberedPublication {
  marketplace_id: string;
  withdrawn_at: string | null;
}

/** A link whose marketplace does not yet match its endpoint's archive (archived, still listed; or the reverse). */
export interface UnsettledPublication {
  tenant_id: string;
  endpoint_id: string;
  marketplace_id: string;
}

export class EndpointRepository {
  constructor(private readonly db: DbOrTransaction) {}

  /** Inserts the record while its tenant holds fewer than `limit` endpoints (0: no limit; db/quotas.ts). */
  async insert(record: EndpointRecord, limit = 0): Promise<void> {
    await insertWithinQuota(this.db, { quota: 'endpoints', limit, column: 'tenant_id', owner: record.tenant_id }, (db) =>
      db.insertInto('endpoints').values(endpointCodec.toRow(record)).execute(),
    );
  }

  /** The tenant's endpoints, oldest first, archived or not as asked (every one by default); with a window, only those rows. */
  async list(tenantId: string, window?: Window, archived: ArchivedFilter = 'all'): Promise<EndpointRecord[]> {
    let query = this.db.selectFrom('endpoints').select(ENDPOINT_COLUMNS).where('tenant_id', '=', tenantId);
    if (archived === 'true') query = query.where('archived_at', 'is not', null);
    if (archived === 'false') query = query.where('archived_at', 'is', null);
    return (await windowed(query.orderBy('created_at').orderBy('seq'), window).execute()).map(endpointCodec.toRecord);
  }

  async count(tenantId: string, archived: ArchivedFilter = 'all'): Promise<number> {
    if (archived === 'all') return countRows(this.db, 'endpoints', { tenant_id: tenantId });
    const row = await this.db
      .selectFrom('endpoints')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('tenant_id', '=', tenantId)
      .where('archived_at', archived === 'true' ? 'is not' : 'is', null)
      .executeTakeFirst();
    return Number(row?.count ?? 0);
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
    changes: Partial<
      Pick<EndpointRecord, 'name' | 'summary' | 'description' | 'published' | 'generation_defaults' | 'updated_at' | 'archived_at'>
    >,
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

  /**
   * Records that the endpoint is published to the marketplace (both must belong to the tenant). A link
   * already there is listed again (`withdrawn_at` cleared): the marketplace has the endpoint now.
   */
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
      .onConflict((oc) => oc.columns(['endpoint_id', 'marketplace_id']).doUpdateSet({ withdrawn_at: null }))
      .execute();
  }

  /** Whether the marketplace has taken the archived endpoint off (`at`), or lists it again (null). */
  async setWithdrawn(tenantId: string, endpointId: string, marketplaceId: string, at: string | null): Promise<void> {
    await this.db
      .updateTable('endpoint_marketplaces')
      .set({ withdrawn_at: at })
      .where('endpoint_id', '=', endpointId)
      .where('marketplace_id', '=', marketplaceId)
      .where('endpoint_id', 'in', (eb) => eb.selectFrom('endpoints').select('id').where('tenant_id', '=', tenantId))
      .execute();
  }

  /** Every marketplace the endpoint is linked to, archived or not (an archived endpoint's are where unarchiving publishes it). */
  async remembered(tenantId: string, endpointId: string): Promise<RememberedPublication[]> {
    return this.linksInPublicationOrder()
      .select(['endpoint_marketplaces.marketplace_id', 'endpoint_marketplaces.withdrawn_at'])
      .where('endpoints.tenant_id', '=', tenantId)
      .where('endpoints.id', '=', endpointId)
      .execute();
  }

  /**
   * The links, of every tenant, whose active marketplace does not match the endpoint's archive yet: archived
   * and not withdrawn, or not archived and withdrawn (the background settles them; an inactive marketplace
   * waits until it is active again).
   */
  async unsettledPublications(): Promise<UnsettledPublication[]> {
    return this.db
      .selectFrom('endpoint_marketplaces')
      .innerJoin('endpoints', 'endpoints.id', 'endpoint_marketplaces.endpoint_id')
      .innerJoin('marketplaces', 'marketplaces.id', 'endpoint_marketplaces.marketplace_id')
      .select(['endpoints.tenant_id', 'endpoint_marketplaces.endpoint_id', 'endpoint_marketplaces.marketplace_id'])
      .where('marketplaces.is_active', '=', 1)
      .where((eb) =>
        eb.or([
          eb.and([eb('endpoints.archived_at', 'is not', null), eb('endpoint_marketplaces.withdrawn_at', 'is', null)]),
          eb.and([eb('endpoints.archived_at', 'is', null), eb('endpoint_marketplaces.withdrawn_at', 'is not', null)]),
        ]),
      )
      .orderBy('endpoints.created_at')
      .orderBy('endpoints.seq')
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

  /** The tenant's endpoints published to a marketplace, oldest first; archived ones are on no marketplace. */
  async listPublishedTo(tenantId: string, marketplaceId: string): Promise<EndpointRecord[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .innerJoin('endpoint_marketplaces', 'endpoint_marketplaces.endpoint_id', 'endpoints.id')
      .select(ENDPOINT_COLUMNS.map((column) => `endpoints.${column}` as const))
      .where('endpoints.tenant_id', '=', tenantId)
      .where('endpoint_marketplaces.marketplace_id', '=', marketplaceId)
      .where('endpoints.archived_at', 'is', null)
      .orderBy('endpoints.created_at')
      .orderBy('endpoints.seq')
      .execute();
    return rows.map(endpointCodec.toRecord);
  }

  /** Ids of the tenants that have published something not archived (start-up sync and heartbeats visit only them). */
  async tenantsWithPublications(): Promise<string[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .innerJoin('endpoint_marketplaces', 'endpoint_marketplaces.endpoint_id', 'endpoints.id')
      .select('endpoints.tenant_id')
      .where('endpoints.archived_at', 'is', null)
      .distinct()
      .execute();
    return rows.map((row) => row.tenant_id);
  }

  /** The marketplaces each endpoint is published to (its `published_to`): none for an archived endpoint. */
  async publishedTo(endpointIds: string[]): Promise<Map<string, string[]>> {
    const result = new Map<string, string[]>();
    if (endpointIds.length === 0) return result;
    const rows = await this.linksInPublicationOrder()
      .select(['endpoint_marketplaces.endpoint_id', 'endpoint_marketplaces.marketplace_id'])
      .where('endpoint_marketplaces.endpoint_id', 'in', endpointIds)
      .where('endpoints.archived_at', 'is', null)
      .execute();
    for (const row of rows) {
      const list = result.get(row.endpoint_id) ?? [];
      list.push(row.marketplace_id);
      result.set(row.endpoint_id, list);
    }
    return result;
  }

  /** Endpoint links with their endpoint, oldest publication first (the marketplace breaks a tie of one millisecond). */
  private linksInPublicationOrder() {
    return this.db
      .selectFrom('endpoint_marketplaces')
      .innerJoin('endpoints', 'endpoints.id', 'endpoint_marketplaces.endpoint_id')
      .orderBy('endpoint_marketplaces.published_at')
      .orderBy('endpoint_marketplaces.marketplace_id');
  }
}
