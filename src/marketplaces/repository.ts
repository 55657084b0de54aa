import { countRows } from '../db/counts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { DEFAULT_TENANT } from '../domain/principal.ts';
import { MARKETPLACE_COLUMNS, type MarketplaceRecord, marketplaceCodec } from './codec.ts';

export class MarketplaceRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async insert(record: MarketplaceRecord, db: DbOrTransaction = this.db): Promise<void> {
    await db.insertInto('marketplaces').values(marketplaceCodec.toRow(record)).execute();
  }

  async list(tenantId: string): Promise<MarketplaceRecord[]> {
    const rows = await this.select().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('seq').execute();
    return rows.map(marketplaceCodec.toRecord);
  }

  async get(tenantId: string, id: string): Promise<MarketplaceRecord | undefined> {
    const row = await this.select().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
    return row && marketplaceCodec.toRecord(row);
  }

  async listActive(tenantId: string): Promise<MarketplaceRecord[]> {
    const rows = await this.select()
      .where('tenant_id', '=', tenantId)
      .where('is_active', '=', 1)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(marketplaceCodec.toRecord);
  }

  /**
   * Active marketplaces whose hub username or satellite id is one of `audiences` (compared
   * case-insensitively), of the given tenants or of every tenant: the accounts a satellite token may be for
   * (API-CONTRACT 6 and 9.1: a hub with the registry names the satellite, an older one the username).
   * Internal to token verification, never reachable with a tenant's credentials.
   */
  async listActiveByAudiences(audiences: readonly string[], tenantIds?: readonly string[]): Promise<MarketplaceRecord[]> {
    if (audiences.length === 0 || tenantIds?.length === 0) return [];
    const lowered = audiences.map((audience) => audience.toLowerCase());
    let query = this.select()
      .where('is_active', '=', 1)
      .where((eb) => eb.or([eb(eb.fn('lower', ['username']), 'in', lowered), eb(eb.fn('lower', ['satellite_id']), 'in', lowered)]));
    if (tenantIds) query = query.where('tenant_id', 'in', tenantIds);
    const rows = await query.orderBy('created_at').orderBy('seq').execute();
    return rows.map(marketplaceCodec.toRecord);
  }

  /**
   * Every active marketplace of every tenant (start-up registers this server's satellite with each).
   * Internal to the background work, never reachable with a tenant's credentials.
   */
  async listAllActive(): Promise<MarketplaceRecord[]> {
    const rows = await this.select().where('is_active', '=', 1).orderBy('created_at').orderBy('seq').execute();
    return rows.map(marketplaceCodec.toRecord);
  }

  /** The active default marketplace of a tenant, or of the `default` tenant when none is given. */
  async activeDefault(tenantId: string | undefined): Promise<MarketplaceRecord | undefined> {
    let query = this.db
      .selectFrom('marketplaces')
      .select(MARKETPLACE_COLUMNS.map((column) => `marketplaces.${column}` as const))
      .where('marketplaces.is_default', '=', 1)
      .where('marketplaces.is_active', '=', 1);
    query =
      tenantId === undefined
        ? query
            .innerJoin('tenants', 'tenants.id', 'marketplaces.tenant_id')
            .where('tenants.name_key', '=', (eb) => eb.fn('lower', [eb.val(DEFAULT_TENANT)]))
        : query.where('marketplaces.tenant_id', '=', tenantId);
    const row = await query.executeTakeFirst();
    return row && marketplaceCodec.toRecord(row);
  }

  /** The record (of any tenant) that holds this hub account (see account.ts). */
  async findByAccount(account: string): Promise<MarketplaceRecord | undefined> {
    const row = await this.select().where('account', '=', account).executeTakeFirst();
    return row && marketplaceCodec.toRecord(row);
  }

  async getDefault(tenantId: string): Promise<MarketplaceRecord | undefined> {
    const row = await this.select().where('tenant_id', '=', tenantId).where('is_default', '=', 1).executeTakeFirst();
    return row && marketplaceCodec.toRecord(row);
  }

  count(tenantId: string, db: DbOrTransaction = this.db): Promise<number> {
    return countRows(db, 'marketplaces', { tenant_id: tenantId });
  }

  async update(tenantId: string, id: string, changes: Partial<MarketplaceRecord>, db: DbOrTransaction = this.db): Promise<void> {
    await db
      .updateTable('marketplaces')
      .set(marketplaceCodec.toChanges(changes))
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .execute();
  }

  async clearDefault(tenantId: string, db: DbOrTransaction = this.db): Promise<void> {
    await db.updateTable('marketplaces').set({ is_default: 0 }).where('tenant_id', '=', tenantId).where('is_default', '=', 1).execute();
  }

  async delete(tenantId: string, id: string, db: DbOrTransaction = this.db): Promise<void> {
    await db.deleteFrom('marketplaces').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** The oldest remaining marketplace, which becomes the default when the default one is removed. */
  async oldest(tenantId: string, db: DbOrTransaction = this.db): Promise<MarketplaceRecord | undefined> {
    // seq breaks ties between marketplaces created in the same millisecond, in insertion order.
    const row = await this.select(db).where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('seq').executeTakeFirst();
    return row && marketplaceCodec.toRecord(row);
  }

  private select(db: DbOrTransaction = this.db) {
    return db.selectFrom('marketplaces').select(MARKETPLACE_COLUMNS);
  }
}
