import { DEFAULT_TENANT, type Tenant } from '../domain/principal.ts';
import { realPath } from '../util/paths.ts';
import type { TenantRepository } from './repository.ts';

export interface IngestionRootsOptions {
  /** SVC_INGESTION_ROOTS. */
  configured: readonly string[];
  /** Development mode: the first registered user's tenant owns SVC_INGESTION_ROOTS as well. */
  developmentMode: boolean;
}

/**
 * Which folders a tenant may index (API-CONTRACT 3). SVC_INGESTION_ROOTS belongs to the first owner
 * only: the `default` tenant, and in development mode the tenant of the first user who registered
 * (the laptop's owner). Any other tenant may index only the folders the operator granted it, none by
 * default, so two tenants never share a folder unless the operator grants it to both.
 */
export class IngestionRoots {
  constructor(
    private readonly tenants: TenantRepository,
    private readonly options: IngestionRootsOptions,
  ) {}

  /** The real paths of the tenant's roots; a root that no longer exists is left out. */
  async of(tenantId: string): Promise<string[]> {
    const roots = [...(await this.tenants.grantedRoots(tenantId))];
    if (await this.isFirstOwner(tenantId)) roots.push(...this.options.configured);
    const real = roots.map((root) => realPath(root)).filter((root): root is string => root !== undefined);
    return [...new Set(real)];
  }

  /** Replaces the folders granted to a tenant (the caller has checked that each exists). */
  async grant(tenant: Tenant, roots: readonly string[]): Promise<void> {
    await this.tenants.setGrantedRoots(tenant.id, roots);
  }

  /**
   * The first owner's tenant: `default`, and in development mode the tenant of the first user who
   * registered (the laptop's owner). It owns SVC_INGESTION_ROOTS and sees what is the operator's.
   */
  async isFirstOwner(tenantId: string): Promise<boolean> {
    const tenant = await this.tenants.findById(tenantId);
    if (tenant?.name.toLowerCase() === DEFAULT_TENANT) return true;
    return this.options.developmentMode && (await this.tenants.firstOwnersTenantId()) === tenantId;
  }
}
