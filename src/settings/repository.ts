import type { DbOrTransaction } from '../db/database.ts';
import { now } from '../db/database.ts';

export class SettingsRepository {
  constructor(private readonly db: DbOrTransaction) {}

  async getPublicUrl(tenantId: string): Promise<string | null> {
    const row = await this.db.selectFrom('tenant_settings').select('public_url').where('tenant_id', '=', tenantId).executeTakeFirst();
    return row?.public_url ?? null;
  }

  async setPublicUrl(tenantId: string, publicUrl: string | null): Promise<void> {
    const updatedAt = now();
    await this.db
      .insertInto('tenant_settings')
      .values({ tenant_id: tenantId, public_url: publicUrl, updated_at: updatedAt })
      .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ public_url: publicUrl, updated_at: updatedAt }))
      .execute();
  }
}
