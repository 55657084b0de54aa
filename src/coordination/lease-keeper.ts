import { type Clock, systemClock } from '../util/clock.ts';
import { DEFAULT_LEASE_TTL_MS, defaultRenewEvery, type Lease, type Leases } from './leases.ts';

export interface LeaseKeeping {
  /** The lease while this replica holds it. */
  readonly lease: Lease | undefined;
  /** Stops asking, and releases the lease if held (its work stops, and another replica may take it at once). */
  stop(): Promise<void>;
}

export interface KeepLeaseOptions {
  readonly clock?: Clock;
  /**
   * The longest wait between two attempts while another replica holds the lease (a third of the default
   * TTL): how soon a lease released by a graceful stop is taken up.
   */
  readonly retryEveryMs?: number;
  /** Told when an attempt fails (the database is unreachable) or the work throws; the keeper carries on. */
  readonly onError?: (error: unknown) => void;
  /** Told when an attempt finds the lease held (by another replica, or by this one's earlier lease): its holder. */
  readonly onRefused?: (holder: string) => void;
}

/** Asked after the holder's lease would lapse: the server's expiry and the next attempt need not meet exactly. */
const AFTER_EXPIRY_MS = 50;

/**
 * Runs `work` on this replica whenever it holds the lease on `name`, and asks for the lease again whenever
 * it does not: among replicas keeping the same name, one runs the work at a time, and when its holder dies
 * another takes over once the lease lapses (the attempt is timed for the moment the holder's lease ends, so
 * the handover takes about the TTL, not the TTL plus a polling period).
 *
 * `work` starts the work and returns; the work stops when `lease.signal` aborts. A `work` that throws (or
 * whose promise rejects) gives the lease up, and the keeper asks again a period later.
 */
export function keepLease(
  leases: Leases,
  name: string,
  work: (lease: Lease) => void | Promise<void>,
  options: KeepLeaseOptions = {},
): LeaseKeeping {
  const clock = options.clock ?? systemClock;
  const retryEveryMs = options.retryEveryMs ?? defaultRenewEvery(DEFAULT_LEASE_TTL_MS);
  const reportError = options.onError ?? (() => undefined);
  let stopped = false;
  let current: Lease | undefined;
  let cancelTimer: (() => void) | undefined;
  let attempting: Promise<void> | undefined;

  const schedule = (ms: number) => {
    cancelTimer?.();
    cancelTimer = clock.after(ms, () => {
      cancelTimer = undefined;
      attempting = attempt().finally(() => {
        attempting = undefined;
      });
    });
  };

  const runWork = async (lease: Lease) => {
    try {
      await work(lease);
    } catch (error) {
      reportError(error);
      await lease.release().catch(reportError);
      if (!stopped) schedule(retryEveryMs);
    }
  };

  const attempt = async () => {
    if (stopped) return;
    let acquisition: Awaited<ReturnType<Leases['acquire']>>;
    try {
      acquisition = await leases.acquire(name);
    } catch (error) {
      reportError(error);
      if (!stopped) schedule(retryEveryMs);
      return;
    }
    if (!acquisition.acquired) {
      options.onRefused?.(acquisition.holder);
      if (!stopped) schedule(Math.min(retryEveryMs, acquisition.retryInMs + AFTER_EXPIRY_MS));
      return;
    }
    const { lease } = acquisition;
    if (stopped) {
      await lease.release().catch(reportError);
      return;
    }
    current = lease;
    lease.signal.addEventListener(
      'abort',
      () => {
        if (current === lease) current = undefined;
        // Lost (taken over, or not renewed while the database was away): ask again; whoever holds it now
        // answers with the time it has left.
        if (!stopped && !cancelTimer) schedule(0);
      },
      { once: true },
    );
    void runWork(lease);
  };

  schedule(0);
  return {
    get lease() {
      return current;
    },
    async stop() {
      stopped = true;
      cancelTimer?.();
      cancelTimer = undefined;
      await attempting;
      await current?.release().catch(reportError);
    },
  };
}
