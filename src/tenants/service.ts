import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { conflictAs } from '../db/conflicts.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../domain/errors.ts';
import type { Principal, Tenant } from '../domain/principal.ts';
import { Issues } from '../http/issues.ts';
import { realPath } from '../util/paths.ts';
import type { IngestionRoots } from './ingestion-roots.ts';
import type { TenantRepository } from './repository.ts';
import type { UserRepository } from './users-repository.ts';

export interface MemberViewData {
  user_id: string;
  email: string;
  tenant_name: string;
  role: 'owner' | 'member';
  created_at: string;
}

export interface TenantViewData {
  name: string;
  ingestion_roots: string[];
  created_at: string;
}

/**
 * Tenants: membership (a member of a tenant, or the admin, can let another registered user in) and the
 * folders the operator lets a tenant index.
 */
export class TenantService {
  constructor(
    private readonly tenants: TenantRepository,
    private readonly users: UserRepository,
    private readonly roots: IngestionRoots,
  ) {}

  async get(principal: Principal, tenantName: string): Promise<TenantViewData> {
    return this.view(await this.requireAccess(principal, tenantName));
  }

  /** Replaces the folders granted to a tenant; each must be an existing folder, and is kept as its real path. */
  async grantRoots(tenantName: string, folders: readonly string[]): Promise<TenantViewData> {
    const tenant = await this.tenants.findByName(tenantName);
    if (!tenant) throw new NotFoundError(`Tenant '${tenantName}' not found`);
    const issues = new Issues(['body', 'ingestion_roots']);
    const real = folders.map((folder, index) => {
      const resolved = isAbsolute(folder) ? realPath(folder) : undefined;
      if (!isAbsolute(folder)) issues.add([index], 'Must be an absolute path', 'value_error');
      else if (resolved === undefined || !statSync(resolved).isDirectory())
        issues.add([index], `'${folder}' is not an existing folder`, 'value_error');
      return resolved ?? folder;
    });
    issues.throwIfAny();
    await this.roots.grant(tenant, [...new Set(real)]);
    return this.view(tenant);
  }

  async addMember(principal: Principal, tenantName: string, email: string): Promise<MemberViewData> {
    const tenant = await this.requireAccess(principal, tenantName);
    const user = await this.users.findByEmail(email.trim().toLowerCase());
    if (!user) throw new NotFoundError(`No user with email '${email}'; they must register first`);
    await conflictAs(`'${user.email}' is already a member of '${tenant.name}'`, () => this.tenants.addMember(tenant.id, user.id, 'member'));
    const member = (await this.tenants.listMembers(tenant.id)).find((m) => m.user_id === user.id);
    if (!member) throw new Error('member vanished right after being added');
    return { ...member, tenant_name: tenant.name };
  }

  /**
   * Removes a member: the tenant's owner or the admin may; the owner cannot be removed (the tenant would
   * be nobody's). Their access ends with their next request.
   */
  async removeMember(principal: Principal, tenantName: string, email: string): Promise<void> {
    const tenant = await this.requireAccess(principal, tenantName);
    await this.requireOwner(principal, tenant, 'removes its members');
    const members = await this.tenants.listMembers(tenant.id);
    const member = members.find((m) => m.email === email.trim().toLowerCase());
    if (!member) throw new NotFoundError(`'${email}' is not a member of '${tenant.name}'`);
    if (member.role === 'owner') throw new ConflictError(`'${member.email}' owns '${tenant.name}' and cannot be removed`);
    await this.tenants.removeMember(tenant.id, member.user_id);
  }

  async listMembers(principal: Principal, tenantName: string): Promise<MemberViewData[]> {
    const tenant = await this.requireAccess(principal, tenantName);
    return (await this.tenants.listMembers(tenant.id)).map((member) => ({ ...member, tenant_name: tenant.name }));
  }

  private async view(tenant: Tenant): Promise<TenantViewData> {
    return { name: tenant.name, ingestion_roots: await this.roots.of(tenant.id), created_at: tenant.created_at };
  }

  /**
   * The admin may manage any tenant, or, when it names one with X-Tenant-Name, that tenant only; a user
   * only the tenants it belongs to.
   */
  /**
   * What only a tenant's owner (or the admin key) may do: its members, where its money goes. A member's
   * token is refused (403) with `what` the owner does.
   */
  async requireOwner(principal: Principal, tenant: Tenant, what: string): Promise<void> {
    if (principal.kind === 'admin') return;
    const owner =
      principal.kind === 'user' &&
      (await this.tenants.listMembers(tenant.id)).some((member) => member.user_id === principal.userId && member.role === 'owner');
    if (!owner) throw new ForbiddenError(`Only the owner of '${tenant.name}' ${what}`);
  }

  private async requireAccess(principal: Principal, tenantName: string): Promise<Tenant> {
    const tenant = await this.tenants.findByName(tenantName);
    if (principal.kind === 'admin') {
      if (principal.tenantNamed && principal.tenant.name.toLowerCase() !== tenantName.toLowerCase()) {
        throw new ForbiddenError(`The admin key acts for tenant '${principal.tenant.name}' here (X-Tenant-Name), not '${tenantName}'`);
      }
      if (!tenant) throw new NotFoundError(`Tenant '${tenantName}' not found`);
      return tenant;
    }
    if (principal.kind !== 'user' || !tenant || !(await this.tenants.isMember(tenant.id, principal.userId))) throw new ForbiddenError();
    return tenant;
  }
}
