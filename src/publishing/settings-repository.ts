import type { NotNull } from 'kysely';
import type { DbOrTransaction } from '../db/database.ts';
import type { PublicUrlSource } from '../db/schema.ts';
import type { SecretBox } from '../security/secret-box.ts';
import type { TunnelCredential } from '../tunnel/manager.ts';
import { type Clock, isoNow } from '../util/clock.ts';

/**
 * A tenant's settings (API-CONTRACT 8): its public URL and its tunnel token. The token is sealed
 * (SecretBox) here on the way in and opened here on the way out: nobody else sees it sealed.
 */
export class TenantSettingsRepository {
  constructor(
    private readonly db: DbOrTransaction,
    private readonly box: SecretBox,
    private readonly clock: Clock,
  ) {}

  async getPublicUrl(tenantId: string): Promise<string | null> {
    const row = await this.db.selectFrom('tenant_settings').select('public_url').where('tenant_id', '=', tenantId).executeTakeFirst();
    return row?.public_url ?? null;
  }

  /** The public URL and where it came from (`set` for a URL stored before sources were kept). */
  async getPublicUrlAndSource(tenantId: string): Promise<{ public_url: string | null; source: PublicUrlSource | null }> {
    const row = await this.db
      .selectFrom('tenant_settings')
      .select(['public_url', 'public_url_source'])
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    const publicUrl = row?.public_url ?? null;
    return { public_url: publicUrl, source: publicUrl === null ? null : (row?.public_url_source ?? 'set') };
  }

  async setPublicUrl(tenantId: string, publicUrl: string | null, source: PublicUrlSource = 'set'): Promise<void> {
    const updatedAt = isoNow(this.clock);
    const publicUrlSource = publicUrl === null ? null : source;
    await this.db
      .insertInto('tenant_settings')
      .values({ tenant_id: tenantId, public_url: publicUrl, public_url_source: publicUrlSource, tunnel_token: null, updated_at: updatedAt })
      .onConflict((oc) =>
        oc.column('tenant_id').doUpdateSet({ public_url: publicUrl, public_url_source: publicUrlSource, updated_at: updatedAt }),
      )
      .execute();
  }

  async hasTunnelToken(tenantId: string): Promise<boolean> {
    const row = await this.db.selectFrom('tenant_settings').select('tunnel_token').where('tenant_id', '=', tenantId).executeTakeFirst();
    return (row?.tunnel_token ?? null) !== null;
  }

  /** null forgets the token. */
  async setTunnelToken(tenantId: string, credential: TunnelCredential | null): Promise<void> {
    const sealed = credential === null ? null : this.box.encrypt(encodeTunnelCredential(credential));
    const updatedAt = isoNow(this.clock);
    await this.db
      .insertInto('tenant_settings')
      .values({ tenant_id: tenantId, public_url: null, tunnel_token: sealed, updated_at: updatedAt })
      .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ tunnel_token: sealed, updated_at: updatedAt }))
      .execute();
  }

  /** Every tenant with a tunnel token (opened), for the reconnection at start-up; `tenantId`'s alone when given. */
  async tunnelTokens(tenantId?: string): Promise<{ tenant_id: string; credential: TunnelCredential }[]> {
    const rows = await this.db
      .selectFrom('tenant_settings')
      .select(['tenant_id', 'tunnel_token'])
      .where('tunnel_token', 'is not', null)
      .$if(tenantId !== undefined, (query) => query.where('tenant_id', '=', tenantId as string))
      .$narrowType<{ tunnel_token: NotNull }>()
      .execute();
    return rows.map((row) => ({ tenant_id: row.tenant_id, credential: decodeTunnelCredential(this.box.decrypt(row.tunnel_token)) }));
  }

  /** The ids of the tenants whose public URL has this host name (lower case; IPv6 in brackets). */
  async tenantIdsWithPublicHost(hostname: string): Promise<string[]> {
    return (await this.publicUrls()).filter((row) => hostnameOf(row.public_url) === hostname).map((row) => row.tenant_id);
  }

  /** The host names of every tenant's public URL. */
  async publicHostnames(): Promise<string[]> {
    return [
      ...new Set((await this.publicUrls()).map((row) => hostnameOf(row.public_url)).filter((host): host is string => host !== undefined)),
    ];
  }

  private async publicUrls(): Promise<{ tenant_id: string; public_url: string }[]> {
    return this.db
      .selectFrom('tenant_settings')
      .select(['tenant_id', 'public_url'])
      .where('public_url', 'is not', null)
      .$narrowType<{ public_url: NotNull }>()
      .execute();
  }
}

/**
 * What the sealed `tunnel_token` column holds: the credential as JSON, `{"token"}` or, for a marketplace's
 * credential, `{"token", "domain"}` (the host its token is bound to: they are one credential, written and
 * forgotten together, so they share the column instead of a new one). Rows written before are the bare token,
 * which ngrok accepted (refused tokens are never stored), and an ngrok token never starts with `{`.
 */
function encodeTunnelCredential(credential: TunnelCredential): string {
  return JSON.stringify(
    credential.domain === undefined ? { token: credential.token } : { token: credential.token, domain: credential.domain },
  );
}

function decodeTunnelCredential(opened: string): TunnelCredential {
  if (!opened.startsWith('{')) return { token: opened };
  const parsed = JSON.parse(opened) as { token?: unknown; domain?: unknown };
  if (typeof parsed.token !== 'string') throw new Error('a stored tunnel credential has no token');
  return typeof parsed.domain === 'string' ? { token: parsed.token, domain: parsed.domain } : { token: parsed.token };
}

function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}
