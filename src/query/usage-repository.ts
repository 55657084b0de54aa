import type { Insertable } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { QueryUsageTable } from '../db/schema.ts';
import type { UsageRow } from './usage-summary.ts';

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

  /** The rows of [from, to) that usage summaries read; the playground's only when `includePlayground`. */
  async rowsBetween(tenantId: string, endpointId: string, from: string, to: string, includePlayground: boolean): Promise<UsageRow[]> {
    let query = this.db
      .selectFrom('query_usage')
      .select([
        'created_at',
        'sender_email',
        'status',
        'refused_by',
        'prompt_tokens',
        'completion_tokens',
        'total_cost',
        'payment_amount',
        'latency_ms',
      ])
      .where('tenant_id', '=', tenantId)
      .where('endpoint_id', '=', endpointId)
      .where('created_at', '>=', from)
      .where('created_at', '<', to);
    if (!includePlayground) query = query.where('origin', '=', 'api');
    return query.execute();
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
