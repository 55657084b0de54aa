import type { ChangeEntry, ChangeLog } from './change-log.ts';
import { keepLease, type LeaseKeeping } from './lease-keeper.ts';
import { DEFAULT_LEASE_TTL_MS, type Lease, type Leases } from './leases.ts';

/**
 * Which replica ingests a dataset: the one holding the lease `dataset:<id>` runs its watcher, scans, keyword
 * and embedding phases (the ingestion engine's runtime of that dataset); every other replica keeps asking
 * for the lease, so that when the holder dies one of them takes the dataset over once the lease lapses
 * (about the TTL). The file queue's claims are exact across replicas (SKIP LOCKED), but one watcher per
 * folder is what keeps a file from being queued, parsed and chunked by every replica at once.
 *
 * This is the ingestion facade that the datasets service calls (start, stop, remove, reindex): the call is
 * acted on here when this replica holds the lease, and announced in the change log for the replica that
 * does (a stop, a reindex) or for the others to start keeping the lease (a start). The announcement is
 * made right after the change is committed, not in its transaction: the engine and the dataset repository
 * write the status through their own statements.
 *
 * On a single SQLite node (`LocalLeases`) the lease is granted at once, so every call reaches the engine as
 * it did without this facade, and nothing is announced (and a replica ignores its own announcements).
 */

/** An entry of a dataset's selection, as ingestion/selection-entries.ts has it (coordination imports no ingestion). */
export interface SelectionEntry {
  readonly path: string;
  readonly kind: 'file' | 'folder';
  readonly prefix: string;
}

/** What the engine does for one dataset (ingestion/engine.ts implements it). */
export interface DatasetIngestion {
  /**
   * Runs the dataset here under its `lease`: every write its runtime makes because it holds the lease is
   * fenced with it (Lease.fence), so a replica paused past the TTL writes nothing once another took over.
   */
  start(datasetId: string, lease?: Lease): Promise<void>;
  stop(datasetId: string, status?: 'stopped' | null): Promise<void>;
  remove(datasetId: string): Promise<void>;
  reindex(datasetId: string): Promise<void>;
  /** The dataset's selection changed (its rows are written): watch what was added, retire what was `removed`. */
  selectionChanged(datasetId: string, removed?: readonly SelectionEntry[]): Promise<void>;
}

export interface LeasedDatasetsDeps {
  readonly leases: Leases;
  readonly changes: ChangeLog;
  readonly engine: DatasetIngestion;
  /** The datasets that should be ingesting (starting, running or in error), at start-up. */
  readonly activeDatasets: () => Promise<readonly { readonly id: string }[]>;
  readonly log: { warn(object: object, message: string): void; info(object: object, message: string): void };
  /** Whether other replicas share the datasets (cluster mode); a single node announces nothing (nobody would hear). */
  readonly announces: boolean;
  /** The longest wait between two attempts at a lease another replica holds (a third of the TTL). */
  readonly retryEveryMs?: number;
}

interface Kept {
  readonly keeping: LeaseKeeping;
  /** Settled once the first attempt is answered: refused, or granted and the dataset started. */
  readonly firstAttempt: Promise<void>;
}

function datasetLeaseName(datasetId: string): string {
  return `dataset:${datasetId}`;
}

export class LeasedDatasets implements DatasetIngestion {
  private readonly kept = new Map<string, Kept>();
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly deps: LeasedDatasetsDeps) {
    this.unsubscribe = deps.changes.subscribe((entry) => this.heard(entry));
  }

  /** At start-up: every active dataset is kept; those whose lease this replica gets resume here. */
  async resumeAll(): Promise<void> {
    const active = await this.deps.activeDatasets();
    await Promise.all(active.map((dataset) => this.keep(dataset.id)));
  }

  async start(datasetId: string): Promise<void> {
    await this.startHere(datasetId);
    await this.tell('dataset.started', datasetId);
  }

  async stop(datasetId: string, status: 'stopped' | null = 'stopped'): Promise<void> {
    await this.deps.engine.stop(datasetId, status);
    await this.tell('dataset.stopped', datasetId);
    await this.forget(datasetId);
  }

  /**
   * Before the dataset is deleted: its runtime stops wherever it runs, then its index is dropped. The holder
   * elsewhere is told first and releases the lease once stopped; the index is dropped under that lease (or once
   * a dead holder's lapsed), so that no runtime writes to tables being dropped.
   */
  async remove(datasetId: string): Promise<void> {
    const kept = this.kept.get(datasetId);
    await kept?.firstAttempt;
    if (kept?.keeping.lease) {
      await this.deps.engine.remove(datasetId);
      await this.tell('dataset.stopped', datasetId);
      await this.forget(datasetId);
      return;
    }
    await this.forget(datasetId);
    await this.tell('dataset.stopped', datasetId);
    const lease = await this.leaseOnceFree(datasetId);
    try {
      await this.deps.engine.remove(datasetId);
    } finally {
      await lease?.release();
    }
  }

  /**
   * Takes the dataset's lease as soon as its holder lets it go; undefined if still held after a TTL (dropped
   * anyway). The wait is measured on the monotonic clock: its pauses are real sleeps, so a stopped test clock
   * would hold it forever, and a change of the system's time should not cut it short or stretch it.
   */
  private async leaseOnceFree(datasetId: string): Promise<Lease | undefined> {
    const deadline = performance.now() + DEFAULT_LEASE_TTL_MS + 1_000;
    for (;;) {
      const acquisition = await this.deps.leases.acquire(datasetLeaseName(datasetId));
      if (acquisition.acquired) return acquisition.lease;
      if (performance.now() >= deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, Math.min(acquisition.retryInMs + 50, 250, deadline - performance.now())));
    }
  }

  /** The holder reindexes: here when this replica holds the lease, otherwise the holder once it hears of it. */
  async reindex(datasetId: string): Promise<void> {
    const kept = this.kept.get(datasetId);
    await kept?.firstAttempt;
    // Not kept here (asked before the start-up's resumeAll got to it): the files are queued again in the
    // shared queue, as a node without runtime for it does.
    if (!kept || kept.keeping.lease) return this.deps.engine.reindex(datasetId);
    await this.tell('dataset.reindex', datasetId);
  }

  /**
   * The selection changed: the holder follows it (it watches the entries). Not kept here, the dataset runs
   * nowhere yet: the engine here retires what was removed, and the next start reads the selection.
   */
  async selectionChanged(datasetId: string, removed: readonly SelectionEntry[] = []): Promise<void> {
    const kept = this.kept.get(datasetId);
    await kept?.firstAttempt;
    if (!kept || kept.keeping.lease) return this.deps.engine.selectionChanged(datasetId, removed);
    await this.tell('dataset.selection', datasetId, { removed: removed.map(({ path, kind, prefix }) => ({ path, kind, prefix })) });
  }

  /** Stops asking for every lease and releases those held (after the engine closed: nothing runs here any more). */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    const kept = [...this.kept.values()];
    this.kept.clear();
    await Promise.all(kept.map(({ keeping }) => keeping.stop()));
  }

  /** Whether this replica asks for (or holds) the dataset's lease: it runs the dataset, or takes it over. */
  keeps(datasetId: string): boolean {
    return this.kept.has(datasetId);
  }

  /** Whether this replica holds the dataset's lease now (tests and the logs ask). */
  holds(datasetId: string): boolean {
    return this.kept.get(datasetId)?.keeping.lease !== undefined;
  }

  private async startHere(datasetId: string): Promise<void> {
    const kept = this.kept.get(datasetId);
    if (!kept) return this.keep(datasetId);
    await kept.firstAttempt;
    // Held: started again (a dataset in error is retried; a running one is left as it is).
    const lease = kept.keeping.lease;
    if (lease) await this.deps.engine.start(datasetId, lease);
  }

  /**
   * Another replica stopped the dataset (and wrote its status): the runtime stops here, then the lease is
   * released, and not before, so that no replica takes the dataset up while it still runs here.
   */
  private async stopHeard(datasetId: string): Promise<void> {
    await this.deps.engine.stop(datasetId, null);
    await this.forget(datasetId);
  }

  /** Stops asking for the dataset's lease, releasing it if held (whoever calls it stopped the runtime first). */
  private async forget(datasetId: string): Promise<void> {
    const kept = this.kept.get(datasetId);
    if (!kept) return;
    this.kept.delete(datasetId);
    await kept.keeping.stop();
  }

  /** Keeps asking for the dataset's lease; answers once the first attempt is answered (and, if granted, the dataset started). */
  private keep(datasetId: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    const { engine, log } = this.deps;
    let answered!: () => void;
    const firstAttempt = new Promise<void>((resolve) => {
      answered = resolve;
    });
    let self: Kept | undefined;
    const keeping = keepLease(
      this.deps.leases,
      datasetLeaseName(datasetId),
      async (lease) => {
        lease.signal.addEventListener(
          'abort',
          () => {
            // Lost (taken over, not renewed in time): the runtime stops here, its status left to the replica
            // that takes over. A lease released by stop() or close() is stopped by them, and waited for.
            if (this.closed || this.kept.get(datasetId) !== self) return;
            log.warn({ dataset: datasetId, why: String(lease.signal.reason) }, 'dataset lease lost: its ingestion stops here');
            void engine
              .stop(datasetId, null)
              .catch((error: unknown) => log.warn({ dataset: datasetId, err: error }, 'stopping a dataset failed'));
          },
          { once: true },
        );
        try {
          await engine.start(datasetId, lease);
        } finally {
          answered();
        }
      },
      {
        onRefused: () => answered(),
        onError: (error) => {
          log.warn({ dataset: datasetId, err: error }, 'the dataset lease could not be asked for, or its dataset not started');
          answered();
        },
        ...(this.deps.retryEveryMs !== undefined ? { retryEveryMs: this.deps.retryEveryMs } : {}),
      },
    );
    self = { keeping, firstAttempt };
    this.kept.set(datasetId, self);
    return firstAttempt;
  }

  /** Announces a change to a dataset to every replica, this one's own announcements being skipped when heard. */
  private async tell(
    kind: 'dataset.started' | 'dataset.stopped' | 'dataset.reindex' | 'dataset.selection',
    datasetId: string,
    more: Record<string, unknown> = {},
  ): Promise<void> {
    if (!this.deps.announces) return;
    await this.deps.changes
      .announce({ kind, payload: { ...more, dataset: datasetId, from: this.deps.leases.holder } })
      .catch((error: unknown) => this.deps.log.warn({ dataset: datasetId, kind, err: error }, 'a dataset change could not be announced'));
  }

  private failed(entry: ChangeEntry): (error: unknown) => void {
    return (error) =>
      this.deps.log.warn({ change: entry.kind, payload: entry.payload, err: error }, 'a dataset change could not be acted on');
  }

  /** Another replica's change to a dataset, acted on here. */
  private async heard(entry: ChangeEntry): Promise<void> {
    const datasetId = entry.payload.dataset;
    if (typeof datasetId !== 'string' || entry.payload.from === this.deps.leases.holder || this.closed) return;
    switch (entry.kind) {
      case 'dataset.started':
        // Left to run: a start waits for the dataset's embedder, and later changes must not wait for it.
        void this.startHere(datasetId).catch(this.failed(entry));
        return;
      case 'dataset.stopped':
        // The status was written by the replica that stopped (or removed) it: only the runtime stops here.
        void this.stopHeard(datasetId).catch(this.failed(entry));
        return;
      case 'dataset.reindex':
        if (this.holds(datasetId)) void this.deps.engine.reindex(datasetId).catch(this.failed(entry));
        return;
      case 'dataset.selection':
        if (this.holds(datasetId)) void this.deps.engine.selectionChanged(datasetId, removedEntries(entry)).catch(this.failed(entry));
        return;
      default:
        return;
    }
  }
}

/** The entries a `dataset.selection` change took out, as announced (anything else in the payload is ignored). */
function removedEntries(entry: ChangeEntry): SelectionEntry[] {
  const removed = entry.payload.removed;
  if (!Array.isArray(removed)) return [];
  return removed.filter(
    (item): item is SelectionEntry =>
      typeof item === 'object' &&
      item !== null &&
      typeof item.path === 'string' &&
      (item.kind === 'file' || item.kind === 'folder') &&
      typeof item.prefix === 'string',
  );
}
