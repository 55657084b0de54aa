import { type Clock, systemClock } from '../util/clock.ts';
import { keepLease, type LeaseKeeping } from './lease-keeper.ts';
import type { Lease, Leases } from './leases.ts';

/**
 * Work that must run on one replica at a time (the heartbeats and the start-up sync, the settlement
 * reconciler, the calibrator, a tenant's tunnel), run under a lease: started while this replica holds the
 * lease, stopped when it loses it, started again if it gets it back. On a single SQLite node the lease is
 * granted at once, so the work starts as it always did. Work an owner asks of the replica the request reached
 * (a tunnel opened through it) `take`s the lease there instead, its holder elsewhere told to let it go
 * (coordination/tunnel-leases.ts).
 */
export interface SingleInstanceWork {
  /** Starts the work under `lease` (whose signal aborts when it is lost); most work needs only to start. */
  start(lease: Lease): void | Promise<void>;
  stop(): Promise<void>;
}

/**
 * The lease names of the single-instance work (`dataset:<id>` is dataset-leases.ts's, `replica:<id>`, held by
 * every replica while it runs, replica-liveness.ts's). `singleton:reconciler` finishes the payments of gone
 * replicas only: each replica confirms its own late receipts, lease or not (payments/reconciler.ts).
 */
export const SINGLETON = {
  heartbeats: 'singleton:heartbeats',
  reconciler: 'singleton:reconciler',
  calibrator: 'singleton:calibrator',
  tunnel: (tenantId: string) => `singleton:tunnel:${tenantId}`,
} as const;

/** How often `take` asks for a lease another replica holds. */
const TAKE_POLL_MS = 100;

export interface ClusterLog {
  warn(object: object, message: string): void;
}

/** The single-instance work of one replica, each under its lease; `close` releases them all. */
export class ClusterWork {
  private readonly keepings = new Map<string, LeaseKeeping>();

  constructor(
    private readonly leases: Leases,
    private readonly log: ClusterLog,
    /** The time `take` waits by: the leases' own (the system's). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Runs `work` whenever this replica holds `name` (a name kept already is left as it is). */
  keep(name: string, work: SingleInstanceWork): void {
    if (this.keepings.has(name)) return;
    const keeping = keepLease(
      this.leases,
      name,
      async (lease) => {
        lease.signal.addEventListener(
          'abort',
          () =>
            void work
              .stop()
              .catch((error: unknown) => this.log.warn({ lease: name, err: error }, 'stopping work whose lease ended failed')),
          { once: true },
        );
        await work.start(lease);
      },
      {
        onError: (error) =>
          this.log.warn({ lease: name, err: error }, 'single-instance work: the lease could not be asked for, or the work failed'),
      },
    );
    this.keepings.set(name, keeping);
  }

  /**
   * Takes `name` for this replica now, for work an owner asked of this very replica (a tunnel opened through
   * it): stops keeping it here (its work stops, the lease is released), then asks for it until granted or
   * `waitMs` passed. The caller told the replica holding it to let it go; a holder that died lets it lapse
   * within the TTL. The lease answered is not kept: the caller runs its work under it and releases it.
   */
  async take(name: string, waitMs: number): Promise<Lease | undefined> {
    await this.forget(name);
    const deadline = this.clock.now() + waitMs;
    for (;;) {
      const acquisition = await this.leases.acquire(name);
      if (acquisition.acquired) return acquisition.lease;
      const left = deadline - this.clock.now();
      if (left <= 0) return undefined;
      // Polled often: a holder told to let go releases within moments, and the owner waits for the answer.
      await new Promise<void>((resolve) => this.clock.after(Math.min(acquisition.retryInMs + 50, TAKE_POLL_MS, left), resolve));
    }
  }

  /** Stops keeping `name` here: its work stops and the lease, if held, is released. */
  async forget(name: string): Promise<void> {
    const keeping = this.keepings.get(name);
    if (!keeping) return;
    this.keepings.delete(name);
    await keeping.stop();
  }

  /** Whether this replica keeps `name`: it runs the work, or stands by to take it over. */
  keeps(name: string): boolean {
    return this.keepings.has(name);
  }

  /** Whether this replica holds `name` now. */
  holds(name: string): boolean {
    return this.keepings.get(name)?.lease !== undefined;
  }

  /** Stops asking, and releases every lease held: each one's work is stopped, and another replica may take it at once. */
  async close(): Promise<void> {
    const keepings = [...this.keepings.values()];
    this.keepings.clear();
    await Promise.all(keepings.map((keeping) => keeping.stop()));
  }
}
