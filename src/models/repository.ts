import { sql } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { ModelTable } from '../db/schema.ts';

export type ModelRow = ModelTable;

export class ModelRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async insert(row: ModelRow): Promise<void> {
    await this.db.insertInto('models').values(row).execute();
  }

  async list(tenantId: string): Promise<ModelRow[]> {
    return this.db.selectFrom('models').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy(sql`rowid`).execute();
  }

  async get(tenantId: string, id: string): Promise<ModelRow | undefined> {
    return this.db.selectFrom('models').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  }

  async update(tenantId: string, id: string, changes: Partial<Pick<ModelRow, 'name' | 'configuration' | 'updated_at'>>): Promise<void> {
    await this.db.updateTable('models').set(changes).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('models').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  async linkedEndpointSlugs(tenantId: string, id: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .select('slug')
      .where('tenant_id', '=', tenantId)
      .where('model_id', '=', id)
      .orderBy('slug')
      .execute();
    return rows.map((row) => row.slug);
  }
}
