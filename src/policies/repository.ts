import { sql } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { PolicyTable } from '../db/schema.ts';

export type PolicyRow = PolicyTable;

export class PolicyRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async insert(row: PolicyRow): Promise<void> {
    await this.db.insertInto('policies').values(row).execute();
  }

  async list(tenantId: string, endpointId?: string): Promise<PolicyRow[]> {
    let query = this.db.selectFrom('policies').selectAll().where('tenant_id', '=', tenantId);
    if (endpointId !== undefined) query = query.where('endpoint_id', '=', endpointId);
    return query.orderBy('created_at').orderBy(sql`rowid`).execute();
  }

  async get(tenantId: string, id: string): Promise<PolicyRow | undefined> {
    return this.db.selectFrom('policies').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  }

  async update(tenantId: string, id: string, changes: Partial<Pick<PolicyRow, 'name' | 'configuration' | 'updated_at'>>): Promise<void> {
    await this.db.updateTable('policies').set(changes).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('policies').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }
}
