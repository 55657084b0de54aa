import { countRows } from '../db/counts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { insertWithinQuota } from '../db/quotas.ts';
import { type Window, windowed } from '../db/windows.ts';
import { POLICY_COLUMNS, type PolicyConfiguration, type PolicyRecord, policyCodec } from './codec.ts';

export class PolicyRepository {
  constructor(private readonly db: DbOrTransaction) {}

  /** Inserts the record while its endpoint holds fewer than `limit` policies (0: no limit; db/quotas.ts). */
  async insert(record: PolicyRecord, limit = 0): Promise<void> {
    await insertWithinQuota(this.db, { quota: 'policies', limit, column: 'endpoint_id', owner: record.endpoint_id }, (db) =>
      db.insertInto('policies').values(policyCodec.toRow(record)).execute(),
    );
  }

  /** The tenant's policies (of one endpoint, when given), oldest first; with a window, only those rows. */
  async list(tenantId: string, endpointId?: string, window?: Window): Promise<PolicyRecord[]> {
    let query = this.db.selectFrom('policies').select(POLICY_COLUMNS).where('tenant_id', '=', tenantId);
    if (endpointId !== undefined) query = query.where('endpoint_id', '=', endpointId);
    const rows = await windowed(query.orderBy('created_at').orderBy('seq'), window).execute();
    return rows.map(policyCodec.toRecord);
  }

  count(tenantId: string, endpointId?: string): Promise<number> {
    return countRows(this.db, 'policies', { tenant_id: tenantId, endpoint_id: endpointId });
  }

  async get(tenantId: string, id: string): Promise<PolicyRecord | undefined> {
    const row = await this.db
      .selectFrom('policies')
      .select(POLICY_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row && policyCodec.toRecord(row);
  }

  async update(
    tenantId: string,
    id: string,
    changes: { name?: string; configuration?: PolicyConfiguration; updated_at: string },
  ): Promise<void> {
    const { configuration, ...columns } = changes;
    await this.db
      .updateTable('policies')
      .set(configuration === undefined ? columns : { ...columns, configuration: policyCodec.serialize(configuration) })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .execute();
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('policies').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }
}
