import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { TenantRepository } from '../tenants/repository.ts';
import type { TunnelCredential, TunnelHooks } from '../tunnel/manager.ts';
import type { PublicUrlService } from './public-url.ts';
import type { TenantSettingsRepository } from './settings-repository.ts';

export interface TunnelAdapterDeps {
  settingsRepository: TenantSettingsRepository;
  publicUrl: PublicUrlService;
  tenants: TenantRepository;
  marketplaces: MarketplaceRepository;
  /** The marketplaces' sessions: the hub hands out tunnel credentials to the logged-in account. */
  hubs: HubClients;
  /** SVC_TUNNEL_DOMAIN, e.g. `syfthub.ngrok.app`. */
  tunnelDomain: string;
}

/** The tunnel's view of knode: tokens in the tenant's settings (stored encrypted), URLs through the public URL service. */
export function tunnelAdapter(deps: TunnelAdapterDeps): TunnelHooks {
  const defaultMarketplace = async (tenant: Tenant) => {
    const marketplace = await deps.marketplaces.getDefault(tenant.id);
    if (!marketplace) throw new NotFoundError('No default marketplace: connect a marketplace before opening a tunnel');
    return marketplace;
  };
  return {
    saveToken: (tenant, credential) => deps.settingsRepository.setTunnelToken(tenant.id, credential),
    hasToken: (tenant) => deps.settingsRepository.hasTunnelToken(tenant.id),
    storedTokens: async () => {
      const stored: { tenant: Tenant; credential: TunnelCredential }[] = [];
      for (const row of await deps.settingsRepository.tunnelTokens()) {
        const tenant = await deps.tenants.findById(row.tenant_id);
        if (tenant) stored.push({ tenant, credential: row.credential });
      }
      return stored;
    },
    storedToken: async (tenantId) => {
      const [row] = await deps.settingsRepository.tunnelTokens(tenantId);
      const tenant = row && (await deps.tenants.findById(tenantId));
      return row && tenant ? { tenant, credential: row.credential } : undefined;
    },
    // The marketplace hands out tunnel hosts named after its users: `<username>.<SVC_TUNNEL_DOMAIN>`.
    domainFor: async (tenant) => `${(await defaultMarketplace(tenant)).username.toLowerCase()}.${deps.tunnelDomain}`,
    // The tenant's own default marketplace only: its session is the tenant's account at that hub.
    marketplaceCredential: async (tenant) => {
      const credentials = await deps.hubs.client(await defaultMarketplace(tenant)).tunnelCredentials();
      return { token: credentials.authToken, domain: credentials.domain };
    },
    publish: async (tenant, url) => {
      await deps.publicUrl.setPublicUrl(tenant, url, 'tunnel');
    },
  };
}
