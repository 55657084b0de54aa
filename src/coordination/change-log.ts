import type { Transaction } from 'kysely';
import { type Db, inTransaction } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { type Clock, systemClock } from '../util/clock.ts';

/**
 * The change log: what one replica changed that the others must act on (a dataset started, stopped or to
 * be reindexed, its selection changed: dataset-leases.ts; a marketplace connected or deleted: services.ts; `endpoint.changed` is
 * not announced yet, since every replica reads endpoints from the database), delivered to every replica's subscribers, the one that
 * made the change included, in the order the changes were committed. The same contract on both engines:
 * `LocalChangeLog` below (a single SQLite node delivers in-process), `coordination/postgres/change-log.ts`
 * (cluster mode: a table written in the change's own transaction, NOTIFY as the wake-up).
 */
export type ChangeKind =
  | 'dataset.started'
  | 'dataset.stopped'
  | 'dataset.reindex'
  | 'dataset.selection'
  | 'marketplace.changed'
  | 'endpoint.changed'
  /** A tenant's tunnel opened or closed through a replica: coordination/tunnel-leases.ts. */
  | 'tunnel.changed';

export interface Change {
  readonly kind: ChangeKind;
  /** What the subscribers need to find what changed (ids, never secrets): stored as JSON. */
  readonly payload: Readonly<Record<string, unknown>>;
}

export interface ChangeEntry extends Change {
  /** Increases with commit order; a subscriber can keep the last it acted on. */
  readonly seq: number;
  /** ISO 8601. */
  readonly createdAt: string;
}

/** Announces one change, inside the transaction that makes it. */
export type Announce = (change: Change) => void;

/**
 * Acts on a change. Subscribers are called one at a time, in order: a long reaction (stopping a dataset's
 * work) should be started here and left to run, or it holds back every later change. A subscriber that
 * throws is reported and the others still hear the change.
 */
export type ChangeSubscriber = (entry: ChangeEntry) => void | Promise<void>;

export interface ChangeLog {
  /**
   * Runs `work` in one transaction; what it announces is recorded in that transaction and delivered once it
   * commits, and never if it rolls back (the transaction is retried like `inTransaction`'s, with the
   * announcements of the failed attempt dropped).
   */
  transaction<T>(work: (trx: Transaction<Database>, announce: Announce) => Promise<T>): Promise<T>;
  /** Announces a change that needs no other write. */
  announce(change: Change): Promise<void>;
  /** Calls `subscriber` with every change committed from now on; the answer unsubscribes. */
  subscribe(subscriber: ChangeSubscriber): () => void;
  /**
   * Delivers every change committed so far (a caller that must see its own change acted on waits for this;
   * never a subscriber, which would wait for its own delivery).
   */
  catchUp(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The subscribers of one replica, called in turn for each change. */
export class ChangeSubscribers {
  private readonly subscribers = new Set<ChangeSubscriber>();

  constructor(private readonly reportError: (error: unknown) => void) {}

  add(subscriber: ChangeSubscriber): () => void {
    // Wrapped, so that the same function subscribed twice is two subscriptions.
    const entry: ChangeSubscriber = (change) => subscriber(change);
    this.subscribers.add(entry);
    return () => this.subscribers.delete(entry);
  }

  async deliver(entry: ChangeEntry): Promise<void> {
    for (const subscriber of [...this.subscribers]) {
      try {
        await subscriber(entry);
      } catch (error) {
        this.reportError(error);
      }
    }
  }
}

export interface ChangeLogOptions {
  readonly clock?: Clock;
  /** Told when a subscriber throws, or (on PostgreSQL) when reading or listening fails. */
  readonly onError?: (error: unknown) => void;
}

/**
 * A single node's change log: nobody else to tell, so a committed change goes straight to this process's
 * subscribers, after the commit and in commit order. Nothing is stored: a node that restarts reads the
 * state itself, as a new replica does.
 */
export class LocalChangeLog implements ChangeLog {
  private readonly subscribers: ChangeSubscribers;
  private readonly clock: Clock;
  private lastSeq = 0;
  /** Numbered changes whose transaction ended: the entry once committed, null when it rolled back. */
  private readonly ended = new Map<number, ChangeEntry | null>();
  private nextToDeliver = 1;
  private delivered: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    options: ChangeLogOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.subscribers = new ChangeSubscribers(options.onError ?? (() => undefined));
  }

  async transaction<T>(work: (trx: Transaction<Database>, announce: Announce) => Promise<T>): Promise<T> {
    let numbered: ChangeEntry[] = [];
    try {
      const result = await inTransaction(this.db, async (trx) => {
        this.end(numbered, false); // an attempt retried: its changes were never committed
        numbered = [];
        const announced: Change[] = [];
        const answer = await work(trx, (change) => announced.push(change));
        // Numbered last, still inside the transaction: SQLite's one connection runs transactions one at a
        // time, so numbers follow commit order.
        const createdAt = new Date(this.clock.now()).toISOString();
        numbered = announced.map((change) => ({ seq: ++this.lastSeq, kind: change.kind, payload: change.payload, createdAt }));
        return answer;
      });
      this.end(numbered, true);
      return result;
    } catch (error) {
      this.end(numbered, false);
      throw error;
    }
  }

  /** Delivers, in number order, every change whose transaction ended, skipping those rolled back. */
  private end(entries: readonly ChangeEntry[], committed: boolean): void {
    for (const entry of entries) this.ended.set(entry.seq, committed ? entry : null);
    for (let entry = this.ended.get(this.nextToDeliver); entry !== undefined; entry = this.ended.get(this.nextToDeliver)) {
      this.ended.delete(this.nextToDeliver++);
      if (entry) this.delivered = this.delivered.then(() => this.subscribers.deliver(entry));
    }
  }

  announce(change: Change): Promise<void> {
    return this.transaction(async (_trx, announce) => announce(change));
  }

  subscribe(subscriber: ChangeSubscriber): () => void {
    return this.subscribers.add(subscriber);
  }

  catchUp(): Promise<void> {
    return this.delivered;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    await this.delivered;
  }
}
