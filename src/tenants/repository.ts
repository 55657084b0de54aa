import type { DbOrTransaction } from '../db/database.ts';
import type { Tenant } from '../domain/principal.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import { ingestionRootsCodec, TENANT_COLUMNS } from './codec.ts';

export interface Member {
  user_id: string;
  email: string;
  role: 'owner' | 'member';
  created_at: string;
}

export class TenantRepository {
  constructor(
    private readonly db: DbOrTransaction,
    private readonly clock: Clock = systemClock,
  ) {}

  async create(name: string, db: DbOrTransaction = this.db): Promise<Tenant> {
    const tenant = { id: crypto.randomUUID(), name, created_at: isoNow(this.clock) };
    await db.insertInto('tenants').values(tenant).execute();
    return tenant;
  }

  /**
   * Tenant names compare case-insensitively: by `name_key`, which the database generates as lower(name) and
   * keeps unique (migration 0015); the name looked up is lowered by the same function.
   */
  async findByName(name: string): Promise<Tenant | undefined> {
    return this.db
      .selectFrom('tenants')
      .select(TENANT_COLUMNS)
      .where('name_key', '=', (eb) => eb.fn('lower', [eb.val(name)]))
      .executeTakeFirst();
  }

  async findById(id: string): Promise<Tenant | undefined> {
    return this.db.selectFrom('tenants').select(TENANT_COLUMNS).where('id', '=', id).executeTakeFirst();
  }

  async ensure(name: string): Promise<Tenant> {
    await this.db
      .insertInto('tenants')
      .values({ id: crypto.randomUUID(), name, created_at: isoNow(this.clock) })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const tenant = await this.findByName(name);
    if (!tenant) throw new Error(`tenant ${name} could not be created`);
    return tenant;
  }

  /** The folders the operator granted the tenant (absolute real paths), besides SVC_INGESTION_ROOTS. */
  async grantedRoots(tenantId: string): Promise<string[]> {
    const row = await this.db.selectFrom('tenants').select('ingestion_roots').where('id', '=', tenantId).executeTakeFirst();
    return row ? ingestionRootsCodec.parse(row.ingestion_roots) : [];
  }

  async setGrantedRoots(tenantId: string, roots: readonly string[]): Promise<void> {
    await this.db
      .updateTable('tenants')
      .set({ ingestion_roots: ingestionRootsCodec.serialize(roots) })
      .where('id', '=', tenantId)
      .execute();
  }

  /** The tenant owned by the first user who ever registered (development mode gives it SVC_INGESTION_ROOTS). */
  async firstOwnersTenantId(): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('tenant_members')
      .innerJoin('users', 'users.id', 'tenant_members.user_id')
      .select('tenant_members.tenant_id')
      .where('tenant_members.role', '=', 'owner')
      .orderBy('users.created_at')
      .orderBy('users.seq')
      .executeTakeFirst();
    return row?.tenant_id;
  }

  async addMember(tenantId: string, userId: string, role: Member['role'], db: DbOrTransaction = this.db): Promise<void> {
    await db
      .insertInto('tenant_members')
      .values({ tenant_id: tenantId, user_id: userId, role, created_at: isoNow(this.clock) })
      .execute();
  }

  /** True when there was such a member. */
  async removeMember(tenantId: string, userId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('tenant_members')
      .where('tenant_id', '=', tenantId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async isMember(tenantId: string, userId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('tenant_members')
      .select('user_id')
      .where('tenant_id', '=', tenantId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async listMembers(tenantId: string): Promise<Member[]> {
    return this.db
      .selectFrom('tenant_members')
      .innerJoin('users', 'users.id', 'tenant_members.user_id')
      .select(['tenant_members.user_id', 'users.email', 'tenant_members.role', 'tenant_members.created_at'])
      .where('tenant_members.tenant_id', '=', tenantId)
      .orderBy('tenant_members.created_at')
      .orderBy('users.seq')
      .execute();
  }
}
