import { SQL } from 'bun';
import { sql, type Transaction } from 'kysely';
import { type Db, inTransaction } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { type Clock, systemClock } from '../../util/clock.ts';
import {
  type Announce,
  type Change,
  type ChangeEntry,
  type ChangeKind,
  type ChangeLog,
  type ChangeLogOptions,
  type ChangeSubscriber,
  ChangeSubscribers,
} from '../change-log.ts';

/** The NOTIFY channel: its payload (the newest seq) is only a wake-up, the table says what changed. */
const CHANGES_CHANNEL = 'knode_changes';
/** The listening connection's application_name, for an operator reading pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'knode change log';

export interface PostgresChangeLogOptions extends ChangeLogOptions {
  /** The database's URL, for the one connection that LISTENs (Kysely's pool has no session to keep). */
  readonly url: string;
  /** How often the log is read without a wake-up: a NOTIFY missed, a connection cut (5 s). */
  readonly pollEveryMs?: number;
  /** How long entries are kept (a day): far longer than any replica needs to read them. */
  readonly retentionMs?: number;
  /** How often this replica prunes older entries (hourly; every replica does, and once is enough). */
  readonly pruneEveryMs?: number;
}

const BATCH = 200;

interface EntryRow {
  seq: number;
  kind: string;
  payload: string;
  created_at: Date | string;
}

/**
 * The change log of replicas sharing one PostgreSQL (cluster mode), in `change_log` (migration 0003).
 *
 * A change is a row written in the transaction of the change itself, followed by `pg_notify`, which the
 * server delivers only once that transaction commits. Each replica keeps the last seq it delivered and,
 * when woken (a notification, its listening connection back after a cut, its own commit, or every
 * `pollEveryMs` in any case), reads what is newer: a notification lost, a connection cut or a pooler that
 * does not pass LISTEN through delays a change by one poll period at most, and loses nothing. Reading in
 * seq order loses nothing either, because writers take their seqs one transaction at a time: seq order is
 * commit order.
 *
 * A replica starts reading after the newest entry at its start: what came before is already in the state
 * it reads at its start.
 */
export class PostgresChangeLog implements ChangeLog {
  private readonly subscribers: ChangeSubscribers;
  private readonly clock: Clock;
  private readonly reportError: (error: unknown) => void;
  private readonly pollEveryMs: number;
  private readonly retentionMs: number;
  private readonly pruneEveryMs: number;
  private listener: SQL | undefined;
  private subscription: SQL.ListenSubscription | undefined;
  private lastSeq = 0;
  private lastPrune = 0;
  private started = false;
  private cancelPoll: (() => void) | undefined;
  private reading: Promise<void> | undefined;
  private readAgain = false;

  constructor(
    private readonly db: Db,
    private readonly options: PostgresChangeLogOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.reportError = options.onError ?? (() => undefined);
    this.subscribers = new ChangeSubscribers(this.reportError);
    this.pollEveryMs = options.pollEveryMs ?? 5_000;
    this.retentionMs = options.retentionMs ?? 86_400_000;
    this.pruneEveryMs = options.pruneEveryMs ?? 3_600_000;
  }

  async transaction<T>(work: (trx: Transaction<Database>, announce: Announce) => Promise<T>): Promise<T> {
    const result = await inTransaction(this.db, async (trx) => {
      const announced: Change[] = [];
      const answer = await work(trx, (change) => announced.push(change));
      // Last in the transaction: the writers' lock is held from here to the commit only.
      if (announced.length > 0) await appendChanges(trx, announced);
      return answer;
    });
    // This replica hears its own change without waiting for the notification to come back.
    if (this.started) void this.catchUp();
    return result;
  }

  announce(change: Change): Promise<void> {
    return this.transaction(async (_trx, announce) => announce(change));
  }

  subscribe(subscriber: ChangeSubscriber): () => void {
    return this.subscribers.add(subscriber);
  }

  /** Reads and delivers what is newer than the last seq delivered; one reader at a time, again if woken meanwhile. */
  catchUp(): Promise<void> {
    if (!this.started) return Promise.resolve();
    if (this.reading) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = (async () => {
      try {
        do {
          this.readAgain = false;
          await this.readNewer();
        } while (this.readAgain && this.started);
      } catch (error) {
        this.reportError(error);
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }

  private async readNewer(): Promise<void> {
    for (;;) {
      const { rows } = await sql<EntryRow>`
        SELECT seq, kind, payload, created_at FROM change_log
        WHERE seq > ${this.lastSeq} ORDER BY seq LIMIT ${BATCH}`.execute(this.db);
      for (const row of rows) {
        this.lastSeq = row.seq;
        await this.subscribers.deliver(entryOf(row));
      }
      if (rows.length < BATCH) return;
    }
  }

  async start(): Promise<void> {
    if (this.started) return;
    const { rows } = await sql<{ newest: number }>`SELECT coalesce(max(seq), 0) AS newest FROM change_log`.execute(this.db);
    this.lastSeq = rows[0]?.newest ?? 0;
    this.lastPrune = this.clock.now();
    this.started = true;
    await this.listen();
    await this.reading; // the catch-up of onlisten, which Bun calls before listen() resolves
    this.schedulePoll();
  }

  /**
   * Subscribes to the channel on a connection of its own. Bun reconnects it after a cut and subscribes
   * again, calling `onlisten` each time: the log is read then, for what was written while it was away.
   * A first subscription that fails is tried again at each poll; polling delivers meanwhile.
   */
  private async listen(): Promise<void> {
    this.listener ??= new SQL(this.options.url, { max: 1, connection: { application_name: LISTENER_APPLICATION_NAME } });
    try {
      this.subscription = await this.listener.listen(
        CHANGES_CHANNEL,
        () => void this.catchUp(),
        () => void this.catchUp(),
      );
    } catch (error) {
      this.reportError(error);
    }
  }

  private schedulePoll(): void {
    this.cancelPoll = this.clock.after(this.pollEveryMs, () => {
      void this.poll().finally(() => {
        if (this.started) this.schedulePoll();
      });
    });
  }

  private async poll(): Promise<void> {
    if (!this.subscription) await this.listen();
    await this.catchUp();
    if (this.clock.now() - this.lastPrune >= this.pruneEveryMs) {
      this.lastPrune = this.clock.now();
      await this.prune().catch(this.reportError);
    }
  }

  /** Deletes entries older than the retention (by the server's clock); answers how many. */
  async prune(): Promise<number> {
    const result = await sql`
      DELETE FROM change_log
      WHERE created_at < clock_timestamp() - ${this.retentionMs}::double precision * interval '1 millisecond'`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }

  async stop(): Promise<void> {
    this.started = false;
    this.cancelPoll?.();
    this.cancelPoll = undefined;
    await this.subscription?.unlisten().catch(this.reportError);
    this.subscription = undefined;
    await this.listener?.close().catch(this.reportError);
    this.listener = undefined;
    await this.reading;
  }
}

/**
 * The writers' lock (an arbitrary constant of knode's): held from a writer's first insert to its commit, so
 * concurrent writers take their seqs one transaction after the other. Without it, a transaction given seq
 * 11 could commit after one given 12, and a reader that had already moved past 12 would never read 11.
 * A transaction-level advisory lock: it works behind a transaction pooler, and neither plain reads, the
 * pruning DELETE nor autovacuum wait for it (a table lock in EXCLUSIVE mode would queue behind a vacuum).
 */
const WRITERS_LOCK = 7_206_394_521_663_017;

/** Writes `changes` in `trx` and asks the server to wake every listener once it commits. */
async function appendChanges(trx: Transaction<Database>, changes: readonly Change[]): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${sql.lit(WRITERS_LOCK)})`.execute(trx);
  let newest = 0;
  for (const change of changes) {
    const { rows } = await sql<{ seq: number }>`
      INSERT INTO change_log (kind, payload) VALUES (${change.kind}, ${JSON.stringify(change.payload)})
      RETURNING seq`.execute(trx);
    newest = rows[0]?.seq ?? newest;
  }
  await sql`SELECT pg_notify(${CHANGES_CHANNEL}, ${String(newest)})`.execute(trx);
}

function entryOf(row: EntryRow): ChangeEntry {
  const createdAt = row.created_at instanceof Date ? row.created_at.toISOString() : new Date(row.created_at).toISOString();
  return { seq: row.seq, kind: row.kind as ChangeKind, payload: JSON.parse(row.payload) as Record<string, unknown>, createdAt };
}
