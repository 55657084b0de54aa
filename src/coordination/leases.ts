import { hostname } from 'node:os';
import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import { ServiceUnavailableError } from '../domain/errors.ts';
import { type Clock, systemClock } from '../util/clock.ts';

/**
 * Leases: which replica does a piece of work that must run once (a dataset's watcher, scans and keyword
 * phase: `dataset:<id>`; heartbeats: `singleton:heartbeats`; a tenant's tunnel: `singleton:tunnel:<tenant>`).
 * The same contract on both engines, so callers never ask which one runs: `LocalLeases` below (a single
 * SQLite node: nobody else to ask), `coordination/postgres/leases.ts` (cluster mode: a row per name).
 */
export interface Lease {
  readonly name: string;
  /**
   * The fencing token: larger at every acquisition of this name, by any replica. Stored beside what the
   * holder writes, or checked with `fence`, it lets a late write of a former holder be refused.
   */
  readonly token: number;
  /**
   * Aborted (with a `LeaseLostError`) once this replica no longer holds the lease: taken over, not renewed
   * within its time to live, or released. The work done under the lease stops when it fires.
   */
  readonly signal: AbortSignal;
  /**
   * Throws `LeaseLostError` unless this lease is still held. Called inside the transaction of a write
   * done under the lease: on PostgreSQL it also keeps the lease from being taken over until that
   * transaction ends, so no write of a former holder lands after a takeover.
   */
  fence(trx: Transaction<Database>): Promise<void>;
  /** Gives the lease up (another replica may take it at once) and aborts `signal`. */
  release(): Promise<void>;
}

export type Acquisition =
  | { readonly acquired: true; readonly lease: Lease }
  /** Someone holds it: `holder` (this replica's own id when it already holds it), free in `retryInMs` at the earliest. */
  | { readonly acquired: false; readonly holder: string; readonly retryInMs: number };

export interface Leases {
  /** Who this replica is, as lease rows name their holder. */
  readonly holder: string;
  /** Takes the lease on `name` unless another holder has it (or this replica already does). */
  acquire(name: string): Promise<Acquisition>;
  /** Releases every lease still held: after a graceful stop, the others take over at their next attempt, not after the TTL. */
  close(): Promise<void>;
}

/**
 * A 503 when it reaches a caller (an API reindex or selection change whose write was refused because this
 * replica lost the dataset meanwhile): nothing was written, and the replica now holding the lease acts on
 * the same request if it is sent again.
 */
export class LeaseLostError extends ServiceUnavailableError {
  constructor(
    readonly leaseName: string,
    readonly why: 'taken over' | 'not renewed in time' | 'released',
  ) {
    super(`lease ${leaseName} lost: ${why}; nothing was changed, try again`);
    this.name = 'LeaseLostError';
  }
}

/** The time a lease lives unrenewed: a dead holder's work moves to another replica after this. */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/** A replica's id for lease rows and logs: host and process, and a random part for a restart with the same pid. */
export function replicaId(): string {
  return `${hostname()}/${process.pid}/${crypto.randomUUID().slice(0, 8)}`;
}

/**
 * A single node's leases: nobody else competes, so every free name is granted. A name this node already
 * holds is refused until released, as on PostgreSQL, so that code which works on one node works on many.
 * Tokens still grow at each acquisition.
 */
export class LocalLeases implements Leases {
  private readonly held = new Map<string, LocalLease>();
  private lastToken = 0;

  constructor(readonly holder: string = replicaId()) {}

  async acquire(name: string): Promise<Acquisition> {
    if (this.held.has(name)) return { acquired: false, holder: this.holder, retryInMs: DEFAULT_LEASE_TTL_MS };
    const lease = new LocalLease(name, ++this.lastToken, () => this.held.delete(name));
    this.held.set(name, lease);
    return { acquired: true, lease };
  }

  async close(): Promise<void> {
    await Promise.all([...this.held.values()].map((lease) => lease.release()));
  }
}

class LocalLease implements Lease {
  private readonly controller = new AbortController();

  constructor(
    readonly name: string,
    readonly token: number,
    private readonly forget: () => void,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async fence(): Promise<void> {
    if (this.signal.aborted) throw this.signal.reason;
  }

  async release(): Promise<void> {
    if (this.signal.aborted) return;
    this.forget();
    this.controller.abort(new LeaseLostError(this.name, 'released'));
  }
}

/** How often a holder renews, by default: a third of the TTL, so two renewals may fail before it lapses. */
export function defaultRenewEvery(ttlMs: number): number {
  return Math.max(1, Math.floor(ttlMs / 3));
}

export interface LeaseTimings {
  /** How long a lease lives unrenewed (30 s). */
  readonly ttlMs?: number;
  /** How often held leases are renewed (a third of the TTL). */
  readonly renewEveryMs?: number;
  /** Timers: renewals and the holder's own deadline. */
  readonly clock?: Clock;
}

export function leaseTimings(options: LeaseTimings): Required<LeaseTimings> {
  const ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  return { ttlMs, renewEveryMs: options.renewEveryMs ?? defaultRenewEvery(ttlMs), clock: options.clock ?? systemClock };
}
