import type { Insertable } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { QueryUsageTable } from '../db/schema.ts';

/** A recorded query as the usage route shows it: what it was charged, when it was, as one `payment`. */
export type UsageRecord = Pick<
  QueryUsageTable,
  'sender_email' | 'dataset_cost' | 'model_cost' | 'total_cost' | 'tokens' | 'status' | 'error' | 'created_at'
> & {
  payment: { rail: 'mpp' | 'accounting'; amount: number | null; currency: 'USD'; transaction: string } | null;
};

const USAGE_COLUMNS = [
  'sender_email',
  'dataset_cost',
  'model_cost',
  'total_cost',
  'tokens',
  'status',
  'error',
  'payment_rail',
  'payment_amount',
  'payment_transaction',
  'created_at',
] as const satisfies readonly (keyof QueryUsageTable)[];

export class UsageRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async record(row: Insertable<QueryUsageTable>): Promise<void> {
    await this.db.insertInto('query_usage').values(row).execute();
  }

  /** Newest first. */
  async list(tenantId: string, endpointId: string, skip: number, limit: number): Promise<UsageRecord[]> {
    const rows = await this.db
      .selectFrom('query_usage')
      .select(USAGE_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where('endpoint_id', '=', endpointId)
      .orderBy('id', 'desc')
      .offset(skip)
      .limit(limit)
      .execute();
    return rows.map(({ payment_rail, payment_amount, payment_transaction, ...row }) => ({
      ...row,
      payment:
        payment_rail && payment_transaction
          ? { rail: payment_rail, amount: payment_amount, currency: 'USD' as const, transaction: payment_transaction }
          : null,
    }));
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
