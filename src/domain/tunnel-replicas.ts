/**
 * What a tenant's tunnel asks of the replicas sharing knode's state (cluster mode, issue 26): the tunnel runs
 * on the one replica holding the tenant's lease (`singleton:tunnel:<tenant>`), and the others stand by to
 * take it over. A port, in domain/ because `coordination/` may not import `tunnel/`:
 * `coordination/tunnel-leases.ts` (`LeasedTunnels`) implements it on the leases and the change log, on a single
 * node too (the lease is granted at once, and nobody is told).
 */

/** What the holder shares of its tunnel, for a replica that does not run it to answer GET /settings/proxy. */
export interface SharedTunnelState {
  state: 'online' | 'reconnecting';
  public_url: string | null;
  /** While reconnecting: when the next attempt is due (epoch milliseconds, the holder's clock). */
  retry_at: number | null;
  error: string | null;
}

/** A term of this replica as the tunnel's holder: the lease, and what is written under it. */
export interface TunnelLease {
  /** Aborted once this replica no longer holds the lease (lost, or released): its tunnel stops. */
  readonly signal: AbortSignal;
  /** Shares the tunnel's state with the other replicas (null: no tunnel here any more); refused once the lease is lost. */
  share(state: SharedTunnelState | null): Promise<void>;
  /** Gives the lease up (after the tunnel was closed): another replica may take it at once. */
  release(): Promise<void>;
}

/** The tunnel of one tenant on this replica, started whenever it gets the lease and stopped when it loses it. */
export interface TunnelWork {
  start(lease: TunnelLease): void | Promise<void>;
  stop(): Promise<void>;
}

/**
 * What one replica heard another do: `taking` (it opens or closes the tunnel: whoever runs it or stands by
 * lets it go), `opened` (it runs the tunnel now: the others stand by to take it over).
 */
export type TunnelChange = 'taking' | 'opened';

export interface TunnelReplicas {
  /** Runs `work` whenever this replica holds the tenant's lease, and asks for it again when it does not (a stand-by). */
  keep(tenantId: string, work: TunnelWork): void;
  /**
   * Takes the tenant's lease for this replica now (an owner's request, answered by the replica it reached):
   * stops keeping it here, tells the replica holding it to let it go, and asks until granted or about a
   * lease's time to live has passed (undefined then).
   */
  take(tenantId: string): Promise<TunnelLease | undefined>;
  /** Stops keeping the tenant's lease here (releasing it if held; the caller stopped the tunnel first). */
  forget(tenantId: string): Promise<void>;
  /** Tells the other replicas (none on a single node). */
  announce(tenantId: string, change: TunnelChange): Promise<void>;
  /** Calls `listener` with what another replica announced (never this one's own announcements). */
  onChange(listener: (tenantId: string, change: TunnelChange) => void): () => void;
  /** The state the holder last shared, when another replica holds the lease; undefined when none runs the tunnel. */
  sharedState(tenantId: string): Promise<SharedTunnelState | undefined>;
}
