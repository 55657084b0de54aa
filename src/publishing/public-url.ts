import type { Logger } from 'pino';
import type { PublicUrlSource } from '../db/schema.ts';
import type { Tenant } from '../domain/principal.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { PublishingService } from './service.ts';
import type { TenantSettingsRepository } from './settings-repository.ts';

export interface PublicUrlDeps {
  settings: TenantSettingsRepository;
  marketplaces: MarketplaceRepository;
  hubs: HubClients;
  /** The hub builds its consumers' URLs from the public URL: after a change every endpoint is sent again. */
  publishing: Pick<PublishingService, 'sync'>;
  log: Logger;
}

/**
 * A tenant's settings (API-CONTRACT 8). The public URL is where the marketplace sends consumers: it is
 * pushed to the tenant's default marketplace (PUT /users/me {domain}) before it is stored, so a URL the
 * hub did not take is never kept (specification, Settings rule 1).
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
    await this.push(tenant, normalized);
    return normalized;
  }

  /** Tells the tenant's default marketplace where knode answers; nothing to do without an active one. */
  private async push(tenant: Tenant, publicUrl: string | null): Promise<void> {
    const marketplace = await this.deps.marketplaces.getDefault(tenant.id);
    if (marketplace?.is_active) await this.deps.hubs.client(marketplace).setDomain(publicUrl);
  }
}

function normalize(publicUrl: string): string {
  return publicUrl.replace(/\/+$/, '');
}
