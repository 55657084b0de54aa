import type { Insertable } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { QueryUsageTable } from '../db/schema.ts';

export type UsageRecord = Pick<
  QueryUsageTable,
  'sender_email' | 'dataset_cost' | 'model_cost' | 'total_cost' | 'tokens' | 'status' | 'created_at'
>;

export class UsageRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async record(row: Insertable<QueryUsageTable>): Promise<void> {
    await this.db.insertInto('query_usage').values(row).execute();
  }

  /** Newest first. */
  async list(tenantId: string, endpointId: string, skip: number, limit: number): Promise<UsageRecord[]> {
    return this.db
      .selectFrom('query_usage')
      .select(['sender_email', 'dataset_cost', 'model_cost', 'total_cost', 'tokens', 'status', 'created_at'])
      .where('tenant_id', '=', tenantId)
      .where('endpoint_id', '=', endpointId)
      .orderBy('id', 'desc')
      .offset(skip)
      .limit(limit)
      .execute();
  }

  async count(tenantId: string, endpointId: string): Promise<number> {
    const row = await this.db
      .selectFrom('query_usage')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('tenant_id', '=', tenantId)
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }
}
