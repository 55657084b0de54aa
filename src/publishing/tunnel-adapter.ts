import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { TenantRepository } from '../tenants/repository.ts';
import type { TunnelHooks } from '../tunnel/manager.ts';
import type { PublicUrlService } from './public-url.ts';
import type { TenantSettingsRepository } from './settings-repository.ts';

export interface TunnelAdapterDeps {
  settingsRepository: TenantSettingsRepository;
  publicUrl: PublicUrlService;
  tenants: TenantRepository;
  marketplaces: MarketplaceRepository;
  /** SVC_TUNNEL_DOMAIN, e.g. `syfthub.ngrok.app`. */
  tunnelDomain: string;
}

/** The tunnel's view of knode: tokens in the tenant's settings (stored encrypted), URLs through the public URL service. */
export function tunnelAdapter(deps: TunnelAdapterDeps): TunnelHooks {
  return {
    saveToken: (tenant, token) => deps.settingsRepository.setTunnelToken(tenant.id, token),
    hasToken: (tenant) => deps.settingsRepository.hasTunnelToken(tenant.id),
    storedTokens: async () => {
      const stored: { tenant: Tenant; token: string }[] = [];
      for (const row of await deps.settingsRepository.tunnelTokens()) {
        const tenant = await deps.tenants.findById(row.tenant_id);
        if (tenant) stored.push({ tenant, token: row.tunnel_token });
      }
      return stored;
    },
    // The marketplace hands out tunnel hosts named after its users: `<username>.<SVC_TUNNEL_DOMAIN>`.
    domainFor: async (tenant) => {
      const marketplace = await deps.marketplaces.getDefault(tenant.id);
      if (!marketplace) throw new NotFoundError('No default marketplace: connect a marketplace before opening a tunnel');
      return `${marketplace.username.toLowerCase()}.${deps.tunnelDomain}`;
    },
    publish: async (tenant, url) => {
      await deps.publicUrl.setPublicUrl(tenant, url, 'tunnel');
    },
  };
}
