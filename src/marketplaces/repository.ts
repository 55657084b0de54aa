import { sql } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { MarketplaceTable } from '../db/schema.ts';

export type MarketplaceRow = MarketplaceTable;

export class MarketplaceRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async insert(row: MarketplaceRow, db: DbOrTransaction = this.db): Promise<void> {
    await db.insertInto('marketplaces').values(row).execute();
  }

  async list(tenantId: string): Promise<MarketplaceRow[]> {
    return this.db.selectFrom('marketplaces').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy(sql`rowid`).execute();
  }

  async get(tenantId: string, id: string): Promise<MarketplaceRow | undefined> {
    return this.db.selectFrom('marketplaces').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  }

  async listActive(tenantId: string): Promise<MarketplaceRow[]> {
    return this.db
      .selectFrom('marketplaces')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('is_active', '=', 1)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** The tenant's active marketplaces whose hub username is `username` (compared case-insensitively). */
  async listActiveByUsername(tenantId: string, username: string): Promise<MarketplaceRow[]> {
    return this.db
      .selectFrom('marketplaces')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('is_active', '=', 1)
      .where(sql<string>`lower(username)`, '=', username.toLowerCase())
      .orderBy('created_at')
      .orderBy(sql`rowid`)
      .execute();
  }

  /**
   * Every tenant's active marketplaces with that hub username: whose endpoints a satellite token is
   * for (its audience). Internal to token verification, never reachable with a tenant's credentials.
   */
  async listActiveByUsernameAnyTenant(username: string): Promise<MarketplaceRow[]> {
    return this.db
      .selectFrom('marketplaces')
      .selectAll()
      .where('is_active', '=', 1)
      .where(sql<string>`lower(username)`, '=', username.toLowerCase())
      .orderBy('created_at')
      .orderBy(sql`rowid`)
      .execute();
  }

  async getDefault(tenantId: string): Promise<MarketplaceRow | undefined> {
    return this.db.selectFrom('marketplaces').selectAll().where('tenant_id', '=', tenantId).where('is_default', '=', 1).executeTakeFirst();
  }

  async count(tenantId: string, db: DbOrTransaction = this.db): Promise<number> {
    const row = await db
      .selectFrom('marketplaces')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('tenant_id', '=', tenantId)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async update(tenantId: string, id: string, changes: Partial<MarketplaceRow>, db: DbOrTransaction = this.db): Promise<void> {
    await db.updateTable('marketplaces').set(changes).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  async clearDefault(tenantId: string, db: DbOrTransaction = this.db): Promise<void> {
    await db.updateTable('marketplaces').set({ is_default: 0 }).where('tenant_id', '=', tenantId).where('is_default', '=', 1).execute();
  }

  async delete(tenantId: string, id: string, db: DbOrTransaction = this.db): Promise<void> {
    await db.deleteFrom('marketplaces').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** The oldest remaining marketplace, which becomes the default when the default one is removed. */
  async oldest(tenantId: string, db: DbOrTransaction = this.db): Promise<MarketplaceRow | undefined> {
    // rowid breaks ties between marketplaces created in the same millisecond, in insertion order.
    return db.selectFrom('marketplaces').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy(sql`rowid`).executeTakeFirst();
  }
}
