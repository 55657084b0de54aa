import type { Logger } from 'pino';
import type { PublicUrlSource } from '../db/schema.ts';
import type { Tenant } from '../domain/principal.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { SatelliteOutcome, SatelliteRegistry } from './satellites.ts';
import type { PublishingService } from './service.ts';
import type { TenantSettingsRepository } from './settings-repository.ts';

export interface PublicUrlDeps {
  settings: TenantSettingsRepository;
  marketplaces: MarketplaceRepository;
  hubs: HubClients;
  /** The hub builds its consumers' URLs from the public URL: after a change every endpoint is sent again. */
  publishing: Pick<PublishingService, 'sync'>;
  /** On a hub with the satellite registry, the public URL is this knode's satellite (API-CONTRACT 9.1). */
  satellites: Pick<SatelliteRegistry, 'ensure' | 'ensureOrRetry' | 'failed'>;
  log: Logger;
}

/**
 * A tenant's settings (API-CONTRACT 8). The public URL is where the marketplace sends consumers: it is
 * pushed to the tenant's default marketplace before it is stored, so a URL the hub did not take is never
 * kept (specification, Settings rule 1). On a hub with the satellite registry (9.1) the push registers or
 * moves this knode's satellite; on an older hub it is the account's domain (PUT /users/me {domain}).
 */
export class PublicUrlService {
  constructor(private readonly deps: PublicUrlDeps) {}

  async publicUrl(tenant: Tenant): Promise<{ public_url: string | null; source: PublicUrlSource | null }> {
    return this.deps.settings.getPublicUrlAndSource(tenant.id);
  }

  /**
   * Pushes, then stores; a hub that refuses or cannot be reached leaves the stored URL as it was (502/503).
   * null clears the URL (the tunnel closed).
   */
  async setPublicUrl(
    tenant: Tenant,
    publicUrl: string | null,
    source: PublicUrlSource = 'set',
  ): Promise<{ public_url: string | null; source: PublicUrlSource | null }> {
    const normalized = publicUrl === null ? null : normalize(publicUrl);
    await this.push(tenant, normalized);
    await this.deps.settings.setPublicUrl(tenant.id, normalized, source);
    await this.deps.publishing
      .sync(tenant)
      .catch((error: unknown) => this.deps.log.warn({ tenant: tenant.name, err: error }, 'sync after a public URL change failed'));
    return { public_url: normalized, source: normalized === null ? null : source };
  }

  /**
   * The URL the operator configured at start-up (SVC_PUBLIC_URL): it is the truth whatever the hub
   * says, so it is stored first and pushed after (a failed push is thrown, for the caller to log; the
   * heartbeats carry the URL anyway). The start-up sync that follows covers the endpoints.
   */
  async adoptPublicUrl(tenant: Tenant, publicUrl: string, source: 'configured' | 'detected'): Promise<string> {
    const normalized = normalize(publicUrl);
    await this.deps.settings.setPublicUrl(tenant.id, normalized, source);
    await this.push(tenant, normalized, true);
    return normalized;
  }

  /**
   * Tells the tenant's marketplaces where knode answers. The default one must take it (its failure is
   * thrown; `retry`: also tried again later, the URL being stored already); the tenant's other
   * marketplaces register their satellite there too, best effort (a failure is logged and retried).
   */
  private async push(tenant: Tenant, publicUrl: string | null, retry = false): Promise<void> {
    const marketplace = await this.deps.marketplaces.getDefault(tenant.id);
    if (marketplace?.is_active) {
      let outcome: SatelliteOutcome = 'legacy';
      try {
        // Clearing the URL (the tunnel closed) leaves the satellite where it is: deleting it would delete its endpoints.
        if (publicUrl !== null) outcome = await this.deps.satellites.ensure(tenant, marketplace.id, publicUrl);
      } catch (error) {
        if (retry) this.deps.satellites.failed(tenant, marketplace.id, error);
        throw error;
      }
      // A hub of 2026-07 has no registry: the URL is the account's domain, as before.
      if (outcome === 'legacy') await this.deps.hubs.client(marketplace).setDomain(publicUrl);
    }
    if (publicUrl === null) return;
    for (const other of await this.deps.marketplaces.listActive(tenant.id)) {
      if (other.id !== marketplace?.id) await this.deps.satellites.ensureOrRetry(tenant, other.id, publicUrl);
    }
  }
}

function normalize(publicUrl: string): string {
  return publicUrl.replace(/\/+$/, '');
}
