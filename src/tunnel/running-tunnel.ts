import type { Logger } from 'pino';
import { errorMessage } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { SharedTunnelState, TunnelLease } from '../domain/tunnel-replicas.ts';
import type { Clock } from '../util/clock.ts';
import type { Backoff, TunnelCredential, TunnelHooks } from './manager.ts';
import { type TunnelConnection, type TunnelProvider, TunnelRefused } from './provider.ts';

/** What a running tunnel needs of its manager. */
export interface TunnelContext {
  readonly provider: TunnelProvider;
  readonly hooks: TunnelHooks;
  readonly log: Logger;
  readonly backoff: Backoff;
  readonly clock: Clock;
  /** Where the tunnel forwards: knode's own port (the configured one until the server listens). */
  port(): number;
}

/**
 * One tenant's tunnel on this replica, under its lease: connected, or reconnecting with backoff after a drop
 * or a failed attempt (a refused marketplace credential renewed once), every new URL published, and each
 * change of state shared with the other replicas under the lease. The tunnel manager decides when one runs.
 */
export class RunningTunnel {
  private connection: TunnelConnection | undefined;
  private cancelRetry: (() => void) | undefined;
  private delayMs: number;
  private stopped = false;
  /** When the next attempt is due (clock time), while one is scheduled. */
  private retryAt: number | undefined;
  /** Why the tunnel went down, until it is back. */
  private lastError: string | undefined;
  /** Whether the marketplace was asked for a new credential since the tunnel was last online (once is enough). */
  private renewed = false;

  constructor(
    private readonly context: TunnelContext,
    readonly tenant: Tenant,
    private credential: TunnelCredential,
    /** The lease it runs under: its state is shared under it, and it stops once the lease is lost. */
    readonly lease: TunnelLease,
    /**
     * Taken for an owner's request (POST), released when it stops; otherwise granted to this replica standing
     * by (start-up, or another replica opened it), and released when the replica stops keeping the lease.
     */
    readonly taken: boolean,
  ) {
    this.delayMs = context.backoff.initialMs;
  }

  get closed(): boolean {
    return this.stopped;
  }

  get online(): boolean {
    return this.connection !== undefined;
  }

  /** Its state, as GET /settings/proxy says it and the other replicas read it. */
  state(): SharedTunnelState {
    return this.connection
      ? { state: 'online', public_url: this.connection.url, retry_at: null, error: null }
      : { state: 'reconnecting', public_url: null, retry_at: this.retryAt ?? null, error: this.lastError ?? null };
  }

  /** Shares its state with the other replicas (nothing on a single node); a failure is logged where it happens. */
  share(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return this.lease.share(this.state());
  }

  /** Closes it (once) and says so to the other replicas; a lease taken for an owner is released after. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelRetry?.();
    await this.connection?.close();
    await this.lease.share(null);
    if (this.taken) await this.lease.release();
  }

  /** Takes `connection` as the live tunnel: the backoff starts over, and a drop schedules the next attempt. */
  attach(connection: TunnelConnection): void {
    this.connection = connection;
    this.delayMs = this.context.backoff.initialMs;
    this.lastError = undefined;
    this.retryAt = undefined;
    this.renewed = false;
    connection.onDrop((reason) => {
      if (this.stopped || this.connection !== connection) return;
      this.context.log.warn({ tenant: this.tenant.name, reason }, 'tunnel dropped; reconnecting');
      this.lastError = reason;
      this.connection = undefined;
      void connection.close();
      this.schedule();
    });
  }

  async reconnect(): Promise<void> {
    if (this.stopped) return;
    const { provider, hooks, log } = this.context;
    try {
      // A marketplace's credential binds only the host it came with; a pasted token follows the default marketplace.
      const domain = this.credential.domain ?? (await hooks.domainFor(this.tenant));
      const connection = await provider.connect({ token: this.credential.token, domain, port: this.context.port() });
      if (this.stopped) {
        await connection.close();
        return;
      }
      this.attach(connection);
      void this.share();
      log.info({ tenant: this.tenant.name, url: connection.url }, 'tunnel connected');
      await hooks.publish(this.tenant, connection.url).catch((error: unknown) => {
        log.warn({ tenant: this.tenant.name, err: error }, 'publishing the tunnel URL failed');
      });
    } catch (error) {
      // A stored marketplace credential can stop working: the hub keeps none, so its operator may delete them
      // from its ngrok account. Refused, it is replaced by a fresh one and tried again at once, but only once
      // until the tunnel is back online: the ngrok library reports a network failure as a refusal too, and a
      // credential minted at every attempt would pile up at the hub (see TunnelManager.openFromMarketplace).
      if (error instanceof TunnelRefused && this.credential.domain !== undefined && !this.renewed && (await this.renew())) {
        return this.reconnect();
      }
      log.warn({ tenant: this.tenant.name, reason: (error as Error).message, retry_in_ms: this.delayMs }, 'tunnel connection failed');
      this.lastError = (error as Error).message;
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    const { backoff, clock } = this.context;
    const delay = this.delayMs;
    this.delayMs = Math.min(backoff.maxMs, this.delayMs * 2);
    this.retryAt = clock.now() + delay;
    this.cancelRetry = clock.after(delay, () => void this.reconnect());
    void this.share();
  }

  /** Asks the marketplace for a new credential and stores it in place of the refused one; false when none came. */
  private async renew(): Promise<boolean> {
    const { hooks, log } = this.context;
    this.renewed = true;
    try {
      const fresh = await hooks.marketplaceCredential(this.tenant);
      if (this.stopped) return false; // stopped meanwhile: the credential it forgot must not come back
      await hooks.saveToken(this.tenant, fresh);
      this.credential = fresh;
      log.info({ tenant: this.tenant.name }, 'the tunnel credential was refused; the marketplace handed out a new one');
      return true;
    } catch (error) {
      log.warn({ tenant: this.tenant.name, reason: errorMessage(error) }, 'no new tunnel credential from the marketplace');
      return false;
    }
  }
}
