import type { Principal } from '../auth/principal.ts';
import type { UserRepository } from '../auth/repository.ts';
import { conflictAs } from '../http/conflicts.ts';
import { ForbiddenError, NotFoundError } from '../http/errors.ts';
import type { Tenant, TenantRepository } from './repository.ts';

export interface MemberViewData {
  user_id: string;
  email: string;
  tenant_name: string;
  role: 'owner' | 'member';
  created_at: string;
}

/** Tenant membership: a member of a tenant (or the admin) can let another registered user in. */
export class TenantService {
  constructor(
    private readonly tenants: TenantRepository,
    private readonly users: UserRepository,
  ) {}

  async addMember(principal: Principal, tenantName: string, email: string): Promise<MemberViewData> {
    const tenant = await this.requireAccess(principal, tenantName);
    const user = await this.users.findByEmail(email.trim().toLowerCase());
    if (!user) throw new NotFoundError(`No user with email '${email}'; they must register first`);
    await conflictAs(`'${user.email}' is already a member of '${tenant.name}'`, () =>
      this.tenants.addMember(tenant.id, user.id, 'member'),
    );
    const member = (await this.tenants.listMembers(tenant.id)).find((m) => m.user_id === user.id);
    if (!member) throw new Error('member vanished right after being added');
    return { ...member, tenant_name: tenant.name };
  }

  async listMembers(principal: Principal, tenantName: string): Promise<MemberViewData[]> {
    const tenant = await this.requireAccess(principal, tenantName);
    return (await this.tenants.listMembers(tenant.id)).map((member) => ({ ...member, tenant_name: tenant.name }));
  }

  /** The admin may manage any tenant; a user only the tenants it belongs to. */
  private async requireAccess(principal: Principal, tenantName: string): Promise<Tenant> {
    const tenant = await this.tenants.findByName(tenantName);
    if (principal.kind === 'admin') {
      if (!tenant) throw new NotFoundError(`Tenant '${tenantName}' not found`);
      return tenant;
    }
    if (principal.kind !== 'user' || !tenant || !(await this.tenants.isMember(tenant.id, principal.userId))) throw new ForbiddenError();
    return tenant;
  }
}
