import type { Tenant } from './principal.ts';

/**
 * The port through which endpoint and policy changes reach the marketplaces (publishing/service.ts
 * implements it): the modules that change endpoints sit below publishing and must not import it.
 */
export interface Publications {
  /** Takes a deleted endpoint off the marketplaces it was published to. */
  removeEverywhere(tenant: Tenant, slug: string, marketplaceIds: readonly string[]): Promise<void>;
  /** Sends a changed endpoint's metadata again, in the background. */
  refresh(tenant: Tenant, endpointId: string): void;
  /**
   * After the endpoint was archived or unarchived: takes it off (or publishes it again to) every marketplace it
   * is linked to. True when every marketplace was told; one that could not be is retried in the background.
   */
  settleArchive(tenant: Tenant, endpointId: string): Promise<boolean>;
}
