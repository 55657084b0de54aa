import { type Insertable, type Kysely, sql } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { Database, QueryUsageTable } from '../db/schema.ts';
import { formatUsd } from '../payments/payment-terms.ts';
import type { SettlementEntry } from '../payments/settlement-journal.ts';
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

  /**
   * The usage row of a paid answer, unless its payment's row was written already (the settlement journal's
   * `usage_written`, set in the same transaction): a paid answer is recorded once, by its query or, when
   * its process stopped first, by the reconciler, and a retry answered again on the same payment adds none.
   */
  async recordOnce(row: Insertable<QueryUsageTable>, settlementId: string): Promise<boolean> {
    const write = async (trx: Kysely<Database>) => {
      const claimed =
        await sql`UPDATE payment_settlements SET usage_written = 1 WHERE challenge_id = ${settlementId} AND usage_written = 0`.execute(trx);
      if (Number(claimed.numAffectedRows ?? 0) === 0) return false;
      await trx.insertInto('query_usage').values(row).execute();
      return true;
    };
    return this.db.isTransaction ? write(this.db) : (this.db as Kysely<Database>).transaction().execute(write);
  }

  /** The usage row a paid answer left in the settlement journal (its process stopped before writing it). */
  async recordSettlement(entry: SettlementEntry): Promise<void> {
    if (!entry.usage) return;
    const endpoint = await this.db.selectFrom('endpoints').select('id').where('id', '=', entry.endpoint_id).executeTakeFirst();
    if (!endpoint) {
      // Deleted since, with its usage: there is no row to write, and asking again every pass would not change that.
      await sql`UPDATE payment_settlements SET usage_written = 1 WHERE challenge_id = ${entry.challenge_id}`.execute(this.db);
      return;
    }
    const row = {
      ...(entry.usage as unknown as Insertable<QueryUsageTable>),
      payment_rail: 'mpp' as const,
      payment_amount: Number(formatUsd(entry.amount)),
      payment_transaction: entry.transaction_hash,
    };
    await this.recordOnce(row, entry.challenge_id);
  }

  /** A `pending` payment failed on chain after its answer went out: its usage row says so. */
  async paymentFailed(entry: SettlementEntry, reason: string): Promise<void> {
    await this.db
      .updateTable('query_usage')
      .set({ error: reason })
      .where('tenant_id', '=', entry.tenant_id)
      .where('payment_transaction', '=', entry.transaction_hash)
      .execute();
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
