import type { DbOrTransaction } from '../db/database.ts';
import type { EndpointTable } from '../db/schema.ts';

export type EndpointRow = EndpointTable;

export class EndpointRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async insert(row: EndpointRow): Promise<void> {
    await this.db.insertInto('endpoints').values(row).execute();
  }

  async list(tenantId: string): Promise<EndpointRow[]> {
    return this.db.selectFrom('endpoints').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').execute();
  }

  async getBySlug(tenantId: string, slug: string): Promise<EndpointRow | undefined> {
    return this.db.selectFrom('endpoints').selectAll().where('tenant_id', '=', tenantId).where('slug', '=', slug).executeTakeFirst();
  }

  async getById(tenantId: string, id: string): Promise<EndpointRow | undefined> {
    return this.db.selectFrom('endpoints').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  }

  async update(tenantId: string, id: string, changes: Partial<Pick<EndpointRow, 'name' | 'summary' | 'description' | 'published' | 'updated_at'>>): Promise<void> {
    await this.db.updateTable('endpoints').set(changes).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** Deletes the endpoint; its policies and marketplace links go with it (ON DELETE CASCADE). */
  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('endpoints').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
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
