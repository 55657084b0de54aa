import type { Logger } from 'pino';
import { BadRequestError, NotFoundError, ServiceUnavailableError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { TunnelChange, TunnelReplicas } from '../domain/tunnel-replicas.ts';
import type { Clock } from '../util/clock.ts';
import { type TunnelConnection, type TunnelProvider, TunnelRefused } from './provider.ts';
import { RunningTunnel, type TunnelContext } from './running-tunnel.ts';

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
  /** One tenant's stored credential, read when this replica takes its tunnel over (undefined: none, or no such tenant). */
  storedToken(tenantId: string): Promise<{ tenant: Tenant; credential: TunnelCredential } | undefined>;
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

const STOPPED: TunnelStatus = {
  connected: false,
  public_url: null,
  has_token: false,
  state: 'stopped',
  retry_in_seconds: null,
  error: null,
};

/**
 * Each tenant's tunnel: open, report, close; after a drop it reconnects with backoff (running-tunnel.ts), and at start-up a
 * stored token reconnects in the background. Every new URL is published. The token never leaves here
 * except to the provider and, encrypted, to the database.
 *
 * A tenant's tunnel runs under its lease (`TunnelReplicas`): in cluster mode, on one replica at a time. The
 * replica an owner opens it through takes the lease (the holder elsewhere lets it go) so that it answers
 * with the provider's result; the replicas with a stored credential stand by, and one of them takes the
 * tunnel over when its holder is gone. On a single node the lease is granted at once and nobody is told.
 */
export class TunnelManager {
  private readonly tunnels = new Map<string, RunningTunnel>();
  /** Each tenant's opens, closes and reactions to other replicas, one at a time. */
  private readonly turns = new Map<string, Promise<unknown>>();
  private readonly stopListening: () => void;
  /** Set by shutdown: a lease granted after it starts nothing (the leases are released next). */
  private shuttingDown = false;
  /** Where the tunnel forwards: the configured port until the server says where it listens. */
  private port: number;

  constructor(
    private readonly provider: TunnelProvider | undefined,
    private readonly hooks: TunnelHooks,
    private readonly log: Logger,
    private readonly backoff: Backoff,
    configuredPort: number,
    private readonly clock: Clock,
    /** Which replica runs each tenant's tunnel (coordination/tunnel-leases.ts). */
    private readonly replicas: TunnelReplicas,
  ) {
    this.port = configuredPort;
    this.stopListening = replicas.onChange((tenantId, change) => this.heard(tenantId, change));
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

  /**
   * The tunnel stops wherever it runs, this replica takes the lease (503 if the holder elsewhere does not let
   * it go within about the lease's time to live), connects, and from then on runs the tunnel under it.
   */
  private openWith(provider: TunnelProvider, tenant: Tenant, credential: TunnelCredential, domain: string): Promise<TunnelStatus> {
    return this.inTurn(tenant.id, async () => {
      await this.letGo(tenant.id);
      const lease = await this.replicas.take(tenant.id);
      if (!lease) throw new ServiceUnavailableError('Another replica runs this tunnel and did not let it go in time: try again');
      let connection: TunnelConnection;
      try {
        connection = await provider.connect({ token: credential.token, domain, port: this.port });
      } catch (error) {
        await lease.release();
        if (error instanceof TunnelRefused) throw new BadRequestError(`Tunnel connection failed: ${error.message}`);
        throw error;
      }
      try {
        await this.hooks.publish(tenant, connection.url);
        await this.hooks.saveToken(tenant, credential);
      } catch (error) {
        await connection.close();
        await lease.release();
        throw error; // nothing changed: the marketplace refused the URL, the token is not kept
      }
      const tunnel = this.run(new RunningTunnel(this.context(provider), tenant, credential, lease, true));
      tunnel.attach(connection);
      await tunnel.share(); // before the answer: a GET on any replica then says what this one says
      // The others stand by from now on, to take the tunnel over if this replica goes.
      await this.replicas
        .announce(tenant.id, 'opened')
        .catch((error: unknown) => this.log.warn({ tenant: tenant.name, err: error }, 'the opened tunnel could not be announced'));
      return this.status(tenant);
    });
  }

  /** GET /settings/proxy: the tunnel here, or the state its holder elsewhere shared. */
  async status(tenant: Tenant): Promise<TunnelStatus> {
    await this.requireProvider();
    const tunnel = this.tunnels.get(tenant.id);
    const state = tunnel ? tunnel.state() : await this.replicas.sharedState(tenant.id);
    return {
      connected: state?.state === 'online',
      public_url: state?.public_url ?? null,
      has_token: await this.hooks.hasToken(tenant),
      state: state?.state ?? 'stopped',
      retry_in_seconds:
        state?.retry_at !== undefined && state.retry_at !== null
          ? Math.max(0, Math.ceil((state.retry_at - this.clock.now()) / 1000))
          : null,
      error: state?.error ?? null,
    };
  }

  /** Each open tunnel's state (for the metrics): `online`, or `reconnecting` after a drop or a failure. */
  states(): { tenant: string; state: 'online' | 'reconnecting' }[] {
    return [...this.tunnels.values()].map((tunnel) => ({
      tenant: tunnel.tenant.name,
      state: tunnel.online ? ('online' as const) : ('reconnecting' as const),
    }));
  }

  /**
   * DELETE /settings/proxy: disconnects wherever it runs (the holder elsewhere is told, and lets the lease
   * go), forgets the token under the lease, so that no stand-by reconnects with it, and clears the URL at the
   * marketplace.
   */
  async close(tenant: Tenant): Promise<TunnelStatus> {
    await this.requireProvider();
    return this.inTurn(tenant.id, async () => {
      await this.letGo(tenant.id);
      // Not taken within the wait (a holder that neither answers nor lapses): forgotten all the same.
      const lease = await this.replicas.take(tenant.id);
      try {
        await this.hooks.saveToken(tenant, null);
        await this.hooks.publish(tenant, null);
      } finally {
        await lease?.release();
      }
      return STOPPED;
    });
  }

  /**
   * Once knode listens on `port`: every stored token reconnects, in the background (start-up never
   * waits for a tunnel), on the replica that gets the tenant's lease.
   */
  async start(port: number): Promise<void> {
    this.port = port;
    // Stored tokens first: without one, the provider's library (ngrok's 11 MB addon) is never loaded.
    const stored = await this.hooks.storedTokens();
    if (stored.length === 0 || !this.provider || !(await this.provider.available())) return;
    for (const { tenant } of stored) this.standBy(tenant.id);
  }

  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    this.stopListening();
    await Promise.all([...this.tunnels.values()].map((tunnel) => this.stopTunnel(tunnel)));
  }

  private async requireProvider(): Promise<TunnelProvider> {
    if (!this.provider || !(await this.provider.available())) throw new NotFoundError('Tunnel service not configured');
    return this.provider;
  }

  /** Runs `work` after the tenant's earlier opens, closes and reactions to other replicas. */
  private inTurn<T>(tenantId: string, work: () => Promise<T>): Promise<T> {
    const next = (this.turns.get(tenantId) ?? Promise.resolve()).then(work);
    const settled = next.catch(() => undefined);
    this.turns.set(tenantId, settled);
    void settled.then(() => {
      if (this.turns.get(tenantId) === settled) this.turns.delete(tenantId);
    });
    return next;
  }

  /** What another replica announced: it takes the tunnel (this one lets it go), or it runs it now (this one stands by). */
  private heard(tenantId: string, change: TunnelChange): void {
    const failed = (error: unknown) => this.log.warn({ tenant: tenantId, change, err: error }, 'a tunnel change could not be acted on');
    if (change === 'taking') {
      void this.inTurn(tenantId, () => this.letGo(tenantId)).catch(failed);
      return;
    }
    void this.inTurn(tenantId, async () => {
      if (this.provider && (await this.provider.available())) this.standBy(tenantId);
    }).catch(failed);
  }

  /** The tunnel stops here, and this replica no longer stands by for it. */
  private async letGo(tenantId: string): Promise<void> {
    const tunnel = this.tunnels.get(tenantId);
    if (tunnel) await this.stopTunnel(tunnel);
    await this.replicas.forget(tenantId);
  }

  /**
   * Asks for the tenant's lease whenever this replica does not hold it; once granted, the stored credential
   * (read then: the former holder may have renewed it) reconnects here, and stops when the lease is lost.
   */
  private standBy(tenantId: string): void {
    const provider = this.provider;
    if (!provider) return;
    let running: RunningTunnel | undefined;
    this.replicas.keep(tenantId, {
      start: async (lease) => {
        const stored = await this.hooks.storedToken(tenantId);
        if (lease.signal.aborted || this.shuttingDown) return;
        if (!stored) {
          // Closed meanwhile: nothing to run, nothing to stand by for.
          void this.inTurn(tenantId, () => this.replicas.forget(tenantId));
          return;
        }
        running = this.run(new RunningTunnel(this.context(provider), stored.tenant, stored.credential, lease, false));
        void running.share();
        void running.reconnect();
      },
      stop: async () => {
        if (running) await this.stopTunnel(running);
      },
    });
  }

  private context(provider: TunnelProvider): TunnelContext {
    const { hooks, log, backoff, clock } = this;
    return { provider, hooks, log, backoff, clock, port: () => this.port };
  }

  /** Makes `tunnel` the tenant's tunnel here, stopped when its lease is lost. */
  private run(tunnel: RunningTunnel): RunningTunnel {
    const earlier = this.tunnels.get(tunnel.tenant.id);
    if (earlier) void this.stopTunnel(earlier);
    this.tunnels.set(tunnel.tenant.id, tunnel);
    tunnel.lease.signal.addEventListener('abort', () => void this.leaseEnded(tunnel), { once: true });
    return tunnel;
  }

  /** The lease ended without this manager letting it go (taken over, or not renewed in time): the tunnel stops here. */
  private async leaseEnded(tunnel: RunningTunnel): Promise<void> {
    if (tunnel.closed) return;
    this.log.warn({ tenant: tunnel.tenant.name }, 'the tunnel lease was lost: the tunnel stops on this replica');
    await this.stopTunnel(tunnel);
    // A stand-by's keeper asks again by itself; a tunnel taken for an owner stands by from now on.
    if (tunnel.taken) void this.inTurn(tunnel.tenant.id, async () => this.standBy(tunnel.tenant.id));
  }

  /** The tunnel stops, and is no longer the tenant's here. */
  private async stopTunnel(tunnel: RunningTunnel): Promise<void> {
    if (this.tunnels.get(tunnel.tenant.id) === tunnel) this.tunnels.delete(tunnel.tenant.id);
    await tunnel.stop();
  }
}
