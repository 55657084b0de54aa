import { sql } from 'kysely';
import { type Db, inTransaction } from '../db/database.ts';
import type { SharedTunnelState, TunnelChange, TunnelLease, TunnelReplicas, TunnelWork } from '../domain/tunnel-replicas.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import type { ChangeLog } from './change-log.ts';
import { type ClusterLog, type ClusterWork, SINGLETON } from './cluster-work.ts';
import { DEFAULT_LEASE_TTL_MS, type Lease, type Leases } from './leases.ts';
import type { ReplicaLiveness } from './replica-liveness.ts';

/**
 * Which replica runs a tenant's tunnel (cluster mode, issue 26): the one holding `singleton:tunnel:<tenant>`.
 * The tunnel manager (`domain/tunnel-replicas.ts` names what it asks) keeps the lease on every replica with a
 * stored credential, the holder running the tunnel and the others standing by; a replica an owner opens or closes the tunnel through takes the
 * lease at once, after telling the holder, through the change log (`tunnel.changed`), to let it go.
 *
 * The holder shares its tunnel's state in `tunnel_states` (migration 0022, PostgreSQL's 0010), written under
 * the lease's fence so that a former holder's late write never lands after a takeover: any replica answers
 * GET /settings/proxy with it. On a single node (`shared` false) the leases are granted at once, nothing is
 * announced and nothing is written.
 */

export interface LeasedTunnelsDeps {
  readonly db: Db;
  readonly work: ClusterWork;
  /**
   * The leases (their holder id is this replica's), the change log, the replicas' liveness, and whether other
   * replicas share the state (cluster mode): only then is anything announced or shared.
   */
  readonly coordination: {
    readonly leases: Leases;
    readonly changes: ChangeLog;
    readonly liveness: ReplicaLiveness;
    readonly shared: boolean;
  };
  /** The leases' time to live (DEFAULT_LEASE_TTL_MS): `take` waits about that long for the holder elsewhere. */
  readonly leaseTtlMs?: number;
  /** Stamps the shared state's `updated_at`. */
  readonly clock?: Clock;
  readonly log: ClusterLog;
}

/** Beyond the TTL, for a dead holder's lease to lapse and be asked for again. */
const TAKE_MARGIN_MS = 1_000;

/** What GET answers while the replica that ran the tunnel is gone and another has not taken it over yet. */
export const HOLDER_GONE = 'the replica running the tunnel stopped; another replica takes it over within the lease time';

interface StateRow {
  holder: string;
  state: 'online' | 'reconnecting';
  public_url: string | null;
  retry_at: number | string | null;
  error: string | null;
}

export class LeasedTunnels implements TunnelReplicas {
  /** Each tenant's state writes, one after the other in the order they were asked for. */
  private readonly writes = new Map<string, Promise<void>>();

  private readonly holder: string;
  private readonly changes: ChangeLog;
  private readonly shared: boolean;
  private readonly waitMs: number;

  constructor(private readonly deps: LeasedTunnelsDeps) {
    this.holder = deps.coordination.leases.holder;
    this.changes = deps.coordination.changes;
    this.shared = deps.coordination.shared;
    this.waitMs = (deps.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS) + TAKE_MARGIN_MS;
  }

  keep(tenantId: string, work: TunnelWork): void {
    this.deps.work.keep(SINGLETON.tunnel(tenantId), {
      start: (lease) => work.start(this.term(tenantId, lease)),
      stop: () => work.stop(),
    });
  }

  async take(tenantId: string): Promise<TunnelLease | undefined> {
    await this.announce(tenantId, 'taking');
    const lease = await this.deps.work.take(SINGLETON.tunnel(tenantId), this.waitMs);
    return lease && this.term(tenantId, lease);
  }

  forget(tenantId: string): Promise<void> {
    return this.deps.work.forget(SINGLETON.tunnel(tenantId));
  }

  async announce(tenantId: string, change: TunnelChange): Promise<void> {
    if (!this.shared) return; // a single node has nobody to tell
    await this.changes.announce({ kind: 'tunnel.changed', payload: { tenant: tenantId, change, from: this.holder } });
  }

  onChange(listener: (tenantId: string, change: TunnelChange) => void): () => void {
    return this.changes.subscribe((entry) => {
      const { tenant, change, from } = entry.payload;
      if (entry.kind !== 'tunnel.changed' || from === this.holder || typeof tenant !== 'string') return;
      if (change === 'taking' || change === 'opened') listener(tenant, change);
    });
  }

  async sharedState(tenantId: string): Promise<SharedTunnelState | undefined> {
    if (!this.shared) return undefined;
    const { rows } = await sql<StateRow>`
      SELECT holder, state, public_url, retry_at, error FROM tunnel_states WHERE tenant_id = ${tenantId}`.execute(this.deps.db);
    const row = rows[0];
    // This replica's own row is one its stop could not delete: the manager, which asked first, runs no tunnel.
    if (!row || row.holder === this.holder) return undefined;
    // Killed while it held the lease: what it wrote is no longer true, and a stand-by takes over once the lease lapses.
    if ((await this.deps.coordination.liveness.gone([row.holder])).size > 0) {
      return { state: 'reconnecting', public_url: null, retry_at: null, error: HOLDER_GONE };
    }
    return {
      state: row.state,
      public_url: row.public_url,
      retry_at: row.retry_at === null ? null : Number(row.retry_at),
      error: row.error,
    };
  }

  private term(tenantId: string, lease: Lease): TunnelLease {
    return {
      signal: lease.signal,
      share: (state) => this.share(tenantId, lease, state),
      release: () => lease.release(),
    };
  }

  private share(tenantId: string, lease: Lease, state: SharedTunnelState | null): Promise<void> {
    if (!this.shared) return Promise.resolve();
    const previous = this.writes.get(tenantId) ?? Promise.resolve();
    const next = previous.then(() => this.write(tenantId, lease, state));
    const settled = next.catch((error: unknown) =>
      this.deps.log.warn({ tenant: tenantId, err: error }, 'the tunnel state could not be shared with the other replicas'),
    );
    this.writes.set(tenantId, settled);
    void settled.then(() => {
      if (this.writes.get(tenantId) === settled) this.writes.delete(tenantId);
    });
    return settled;
  }

  private async write(tenantId: string, lease: Lease, state: SharedTunnelState | null): Promise<void> {
    const { db } = this.deps;
    const holder = this.holder;
    if (state === null) {
      // Not fenced: the lease may be gone already (lost, released). Only this replica's own row goes: a
      // replica that took over wrote its own holder id.
      await sql`DELETE FROM tunnel_states WHERE tenant_id = ${tenantId} AND holder = ${holder}`.execute(db);
      return;
    }
    if (lease.signal.aborted) return; // a stopped term's late state: its stop deletes the row
    const updatedAt = isoNow(this.deps.clock ?? systemClock);
    await inTransaction(db, async (trx) => {
      await lease.fence(trx);
      await sql`
        INSERT INTO tunnel_states (tenant_id, holder, state, public_url, retry_at, error, updated_at)
        VALUES (${tenantId}, ${holder}, ${state.state}, ${state.public_url}, ${state.retry_at}, ${state.error}, ${updatedAt})
        ON CONFLICT (tenant_id) DO UPDATE SET
          holder = excluded.holder, state = excluded.state, public_url = excluded.public_url,
          retry_at = excluded.retry_at, error = excluded.error, updated_at = excluded.updated_at`.execute(trx);
    });
  }
}
