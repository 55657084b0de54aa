import type { Tenant } from '../tenants/repository.ts';
import type { SettingsRepository } from './repository.ts';

/**
 * A tenant's settings (API-CONTRACT 8). The public URL is stored here; pushing it to the tenant's default
 * marketplace (and refusing the change when the hub does) comes with the marketplace client.
 */
export class SettingsService {
  constructor(private readonly settings: SettingsRepository) {}

  async publicUrl(tenant: Tenant): Promise<{ public_url: string | null }> {
    return { public_url: await this.settings.getPublicUrl(tenant.id) };
  }

  async setPublicUrl(tenant: Tenant, publicUrl: string): Promise<{ public_url: string | null }> {
    const normalized = publicUrl.replace(/\/+$/, '');
    await this.settings.setPublicUrl(tenant.id, normalized);
    return { public_url: normalized };
  }
}
