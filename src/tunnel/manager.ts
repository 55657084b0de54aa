import type { Logger } from 'pino';
import { BadRequestError, errorMessage, NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import { type TunnelConnection, type TunnelProvider, TunnelRefused } from './provider.ts';

/** What GET/POST/DELETE /settings/proxy answer (specification, Settings). */
export interface TunnelStatus {
  connected: boolean;
  public_url: string | null;
  has_token: boolean;
  /** `stopped` (no tunnel), `online`, or `reconnecting` after a drop or a failed attempt. */
  state: 'stopped' | 'online' | 'reconnecting';
  /** While reconnecting: the seconds until the next attempt. */
  retry_in_seconds: number | null;
  /** While reconnecting: why the tunnel is down (the drop's or the last attempt's reason). */
  error: string | null;
}

/**
 * What a tunnel connects with: an ngrok authtoken and, for a credential handed out by the marketplace, the one
 * host it is bound to (without one, the host is `domainFor`'s).
 */
export interface TunnelCredential {
  token: string;
  domain?: string;
}

/** The parts of knode a tunnel needs: where its token is kept, what host it gets, where its URL goes. */
export interface TunnelHooks {
  /** Keeps the credential (encrypted at rest) or forgets it (null). */
  saveToken(tenant: Tenant, credential: TunnelCredential | null): Promise<void>;
  /** Every tenant with a stored credential, for the reconnection at start-up. */
  storedTokens(): Promise<{ tenant: Tenant; credential: TunnelCredential }[]>;
  hasToken(tenant: Tenant): Promise<boolean>;
  /** `<default marketplace username>.<SVC_TUNNEL_DOMAIN>`; NotFoundError when the tenant has no default marketplace. */
  domainFor(tenant: Tenant): Promise<string>;
  /**
   * A fresh credential from the tenant's default marketplace (its hub's tunnel credentials, bound to the host
   * the hub names); NotFoundError without a default marketplace, the hub's failures as 502 or 503.
   */
  marketplaceCredential(tenant: Tenant): Promise<Required<TunnelCredential>>;
  /** Makes `url` the tenant's public URL (null clears it), pushed to its marketplace, endpoints synced. */
  publish(tenant: Tenant, url: string | null): Promise<void>;
}

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** API-CONTRACT 8: 5 s, doubling, at most 60 s between attempts. */
export const TUNNEL_BACKOFF: Backoff = { initialMs: 5_000, maxMs: 60_000 };

interface TenantTunnel {
  tenant: Tenant;
  credential: TunnelCredential;
  connection?: TunnelConnection;
  cancelRetry?: () => void;
  delayMs: number;
  closed: boolean;
  /** When the next attempt is due (clock time), while one is scheduled. */
  retryAt?: number;
  /** Why the tunnel went down, until it is back. */
  lastError?: string;
  /** Whether the marketplace was asked for a new credential since the tunnel was last online (once is enough). */
  renewed?: boolean;
}

/**
 * Each tenant's tunnel: open, report, close; after a drop it reconnects with backoff, and at start-up a
 * stored token reconnects in the background. Every new URL is published. The token never leaves here
 * except to the provider and, encrypted, to the database.
 */
export class TunnelManager {
  private readonly tunnels = new Map<string, TenantTunnel>();
  /** Where the tunnel forwards: the configured port until the server says where it listens. */
  private port: number;

  constructor(
    private readonly provider: TunnelProvider | undefined,
    private readonly hooks: TunnelHooks,
    private readonly log: Logger,
    private readonly backoff: Backoff = TUNNEL_BACKOFF,
    configuredPort = 8080,
    private readonly clock: Clock = systemClock,
    /** Cluster mode: runs a tenant's stored tunnel only on the replica holding its lease (coordination/); at once otherwise. */
    private readonly underLease: (tenantId: string, work: { start(): void; stop(): Promise<void> }) => void = (_tenantId, work) =>
      work.start(),
  ) {
    this.port = configuredPort;
  }

  /**
   * POST /settings/proxy `{"tunnel_token"}`: 404 without a provider or default marketplace, 400 with the
   * provider's reason.
   */
  async open(tenant: Tenant, token: string): Promise<TunnelStatus> {
    const provider = await this.requireProvider();
    const domain = await this.hooks.domainFor(tenant);
    return this.openWith(provider, tenant, { token }, domain);
  }

  /**
   * POST /settings/proxy `{"from_marketplace": true}`: the tenant's default marketplace hands out the credential
   * and names the host. Like a pasted token, the credential is stored (encrypted) and reused by every
   * reconnection, after a drop or a restart, instead of being asked for again: the hub mints a new ngrok
   * credential in its own ngrok account at each call and never deletes one, so asking at each attempt (every
   * 5 to 60 s during an outage) would pile them up there, and a tunnel would then also need the hub to be up
   * to come back. Asking again is the owner's choice: this call, once more.
   */
  async openFromMarketplace(tenant: Tenant): Promise<TunnelStatus> {
    // The provider first: a credential the hub minted for a tunnel that cannot be opened here would be wasted.
    const provider = await this.requireProvider();
    const credential = await this.hooks.marketplaceCredential(tenant);
    return this.openWith(provider, tenant, credential, credential.domain);
  }

  private async openWith(provider: TunnelProvider, tenant: Tenant, credential: TunnelCredential, domain: string): Promise<TunnelStatus> {
    await this.stop(tenant);
    let connection: TunnelConnection;
    try {
      connection = await provider.connect({ token: credential.token, domain, port: this.port });
    } catch (error) {
      if (error instanceof TunnelRefused) throw new BadRequestError(`Tunnel connection failed: ${error.message}`);
      throw error;
    }
    try {
      await this.hooks.publish(tenant, connection.url);
      await this.hooks.saveToken(tenant, credential);
    } catch (error) {
      await connection.close();
      throw error; // nothing changed: the marketplace refused the URL, the token is not kept
    }
    const tunnel: TenantTunnel = { tenant, credential, delayMs: this.backoff.initialMs, closed: false };
    this.attach(tunnel, connection);
    this.tunnels.set(tenant.id, tunnel);
    return this.status(tenant);
  }

  /** GET /settings/proxy. */
  async status(tenant: Tenant): Promise<TunnelStatus> {
    await this.requireProvider();
    const tunnel = this.tunnels.get(tenant.id);
    const connection = tunnel?.connection;
    const waiting = tunnel && !connection;
    return {
      connected: connection !== undefined,
      public_url: connection?.url ?? null,
      has_token: await this.hooks.hasToken(tenant),
      state: !tunnel ? 'stopped' : connection ? 'online' : 'reconnecting',
      retry_in_seconds: waiting && tunnel.retryAt !== undefined ? Math.max(0, Math.ceil((tunnel.retryAt - this.clock.now()) / 1000)) : null,
      error: waiting ? (tunnel.lastError ?? null) : null,
    };
  }

  /** Each open tunnel's state (for the metrics): `online`, or `reconnecting` after a drop or a failure. */
  states(): { tenant: string; state: 'online' | 'reconnecting' }[] {
    return [...this.tunnels.values()].map((tunnel) => ({
      tenant: tunnel.tenant.name,
      state: tunnel.connection ? ('online' as const) : ('reconnecting' as const),
    }));
  }

  /** DELETE /settings/proxy: disconnects, forgets the token, clears the URL at the marketplace. */
  async close(tenant: Tenant): Promise<TunnelStatus> {
    await this.requireProvider();
    await this.stop(tenant);
    await this.hooks.saveToken(tenant, null);
    await this.hooks.publish(tenant, null);
    return { connected: false, public_url: null, has_token: false, state: 'stopped', retry_in_seconds: null, error: null };
  }

  /**
   * Once knode listens on `port`: every stored token reconnects, in the background (start-up never
   * waits for a tunnel).
   */
  async start(port: number): Promise<void> {
    this.port = port;
    // Stored tokens first: without one, the provider's library (ngrok's 11 MB addon) is never loaded.
    const stored = await this.hooks.storedTokens();
    if (stored.length === 0 || !this.provider || !(await this.provider.available())) return;
    for (const { tenant, credential } of stored) {
      this.underLease(tenant.id, {
        start: () => {
          const tunnel: TenantTunnel = { tenant, credential, delayMs: this.backoff.initialMs, closed: false };
          this.tunnels.set(tenant.id, tunnel);
          void this.reconnect(tunnel);
        },
        stop: () => this.stop(tenant),
      });
    }
  }

  async shutdown(): Promise<void> {
    await Promise.all([...this.tunnels.values()].map((tunnel) => this.stop(tunnel.tenant)));
  }

  private async requireProvider(): Promise<TunnelProvider> {
    if (!this.provider || !(await this.provider.available())) throw new NotFoundError('Tunnel service not configured');
    return this.provider;
  }

  private async stop(tenant: Tenant): Promise<void> {
    const tunnel = this.tunnels.get(tenant.id);
    if (!tunnel) return;
    this.tunnels.delete(tenant.id);
    tunnel.closed = true;
    tunnel.cancelRetry?.();
    await tunnel.connection?.close();
  }

  private attach(tunnel: TenantTunnel, connection: TunnelConnection): void {
    tunnel.connection = connection;
    tunnel.delayMs = this.backoff.initialMs;
    tunnel.lastError = undefined;
    tunnel.retryAt = undefined;
    tunnel.renewed = false;
    connection.onDrop((reason) => {
      if (tunnel.closed || tunnel.connection !== connection) return;
      this.log.warn({ tenant: tunnel.tenant.name, reason }, 'tunnel dropped; reconnecting');
      tunnel.lastError = reason;
      tunnel.connection = undefined;
      void connection.close();
      this.schedule(tunnel);
    });
  }

  private schedule(tunnel: TenantTunnel): void {
    if (tunnel.closed) return;
    const delay = tunnel.delayMs;
    tunnel.delayMs = Math.min(this.backoff.maxMs, tunnel.delayMs * 2);
    tunnel.retryAt = this.clock.now() + delay;
    tunnel.cancelRetry = this.clock.after(delay, () => void this.reconnect(tunnel));
  }

  /** Asks the marketplace for a new credential and stores it in place of the refused one; false when none came. */
  private async renew(tunnel: TenantTunnel): Promise<boolean> {
    tunnel.renewed = true;
    try {
      const fresh = await this.hooks.marketplaceCredential(tunnel.tenant);
      if (tunnel.closed) return false; // stopped meanwhile: the credential it forgot must not come back
      await this.hooks.saveToken(tunnel.tenant, fresh);
      tunnel.credential = fresh;
      this.log.info({ tenant: tunnel.tenant.name }, 'the tunnel credential was refused; the marketplace handed out a new one');
      return true;
    } catch (error) {
      this.log.warn({ tenant: tunnel.tenant.name, reason: errorMessage(error) }, 'no new tunnel credential from the marketplace');
      return false;
    }
  }

  private async reconnect(tunnel: TenantTunnel): Promise<void> {
    if (tunnel.closed || !this.provider) return;
    try {
      // A marketplace's credential binds only the host it came with; a pasted token follows the default marketplace.
      const domain = tunnel.credential.domain ?? (await this.hooks.domainFor(tunnel.tenant));
      const connection = await this.provider.connect({ token: tunnel.credential.token, domain, port: this.port });
      if (tunnel.closed) {
        await connection.close();
        return;
      }
      this.attach(tunnel, connection);
      this.log.info({ tenant: tunnel.tenant.name, url: connection.url }, 'tunnel connected');
      await this.hooks.publish(tunnel.tenant, connection.url).catch((error: unknown) => {
        this.log.warn({ tenant: tunnel.tenant.name, err: error }, 'publishing the tunnel URL failed');
      });
    } catch (error) {
      // A stored marketplace credential can stop working: the hub keeps none, so its operator may delete them
      // from its ngrok account. Refused, it is replaced by a fresh one and tried again at once, but only once
      // until the tunnel is back online: the ngrok library reports a network failure as a refusal too, and a
      // credential minted at every attempt would pile up at the hub (see openFromMarketplace).
      if (error instanceof TunnelRefused && tunnel.credential.domain !== undefined && !tunnel.renewed && (await this.renew(tunnel))) {
        return this.reconnect(tunnel);
      }
      this.log.warn(
        { tenant: tunnel.tenant.name, reason: (error as Error).message, retry_in_ms: tunnel.delayMs },
        'tunnel connection failed',
      );
      tunnel.lastError = (error as Error).message;
      this.schedule(tunnel);
    }
  }
}
