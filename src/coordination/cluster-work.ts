import { keepLease, type LeaseKeeping } from './lease-keeper.ts';
import type { Leases } from './leases.ts';

/**
 * Work that must run on one replica at a time (the heartbeats and the start-up sync, the settlement
 * reconciler, the calibrator, a tenant's tunnel), run under a lease: started while this replica holds the
 * lease, stopped when it loses it, started again if it gets it back. On a single SQLite node the lease is
 * granted at once, so the work starts as it always did.
 */
export interface SingleInstanceWork {
  start(): void | Promise<void>;
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

export interface ClusterLog {
  warn(object: object, message: string): void;
}

/** The single-instance work of one replica, each under its lease; `close` releases them all. */
export class ClusterWork {
  private readonly keepings = new Map<string, LeaseKeeping>();

  constructor(
    private readonly leases: Leases,
    private readonly log: ClusterLog,
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
        await work.start();
      },
      {
        onError: (error) =>
          this.log.warn({ lease: name, err: error }, 'single-instance work: the lease could not be asked for, or the work failed'),
      },
    );
    this.keepings.set(name, keeping);
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
