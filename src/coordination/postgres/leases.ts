import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import type { Clock } from '../../util/clock.ts';
import { type Acquisition, type Lease, LeaseLostError, type Leases, type LeaseTimings, leaseTimings, replicaId } from '../leases.ts';

export interface PostgresLeaseOptions extends LeaseTimings {
  /** This replica's id in lease rows (host, pid and a random part by default). */
  readonly holder?: string;
  /** Told when a renewal fails (the database is unreachable): the leases lapse at their deadline unless a later one succeeds. */
  readonly onError?: (error: unknown) => void;
}

/**
 * Leases for replicas sharing one PostgreSQL (cluster mode): a row per name in `coordination_leases`
 * (migration 0003), taken by one upsert that succeeds only when the row is free, lapsed, or already
 * this replica's. Rows, not advisory locks: a row lease needs no session of its own, so it works behind
 * a transaction pooler (PgBouncer), and it outlives a cut connection by its TTL instead of vanishing.
 *
 * Whether a lease lapsed is judged by the server's clock (`clock_timestamp()`), never a replica's, so
 * replicas' clocks may differ. The holder's own deadline runs on the injected clock, from the moment it
 * sent its last successful renewal: that moment precedes the server's stamp, so the holder always gives
 * up before anyone else may take over (while clocks run at the same rate).
 *
 * Every held lease is renewed by one statement per period, however many there are (a replica may hold a
 * lease per dataset).
 */
export class PostgresLeases implements Leases {
  readonly holder: string;
  readonly ttlMs: number;
  readonly clock: Clock;
  private readonly renewEveryMs: number;
  private readonly reportError: (error: unknown) => void;
  private readonly held = new Map<string, PostgresLease>();
  /** Names this replica is acquiring right now: asked again meanwhile, they are refused as held names are. */
  private readonly acquiring = new Set<string>();
  private cancelRenewal: (() => void) | undefined;
  private renewing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly db: Db,
    options: PostgresLeaseOptions = {},
  ) {
    const timings = leaseTimings(options);
    this.ttlMs = timings.ttlMs;
    this.renewEveryMs = timings.renewEveryMs;
    this.clock = timings.clock;
    this.holder = options.holder ?? replicaId();
    this.reportError = options.onError ?? (() => undefined);
  }

  async acquire(name: string): Promise<Acquisition> {
    if (this.closed) throw new Error('these leases are closed');
    if (this.held.has(name) || this.acquiring.has(name)) return { acquired: false, holder: this.holder, retryInMs: this.ttlMs };
    this.acquiring.add(name);
    try {
      const sentAt = this.clock.now();
      // A row lapsed or released (or this replica's own, left by a lease it lost) is taken with the next
      // token. ON CONFLICT locks the row and re-checks the WHERE on its newest version: of two replicas
      // taking a lapsed lease at once, the second sees the first's fresh expiry and gets nothing back.
      const { rows } = await sql<{ token: number }>`
        INSERT INTO coordination_leases AS lease (name, holder, token, acquired_at, expires_at)
        VALUES (${name}, ${this.holder}, 1, clock_timestamp(), clock_timestamp() + ${this.ttlMs}::double precision * interval '1 millisecond')
        ON CONFLICT (name) DO UPDATE SET
          holder = EXCLUDED.holder, token = lease.token + 1, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
        WHERE lease.expires_at <= clock_timestamp() OR lease.holder = EXCLUDED.holder
        RETURNING token`.execute(this.db);
      const token = rows[0]?.token;
      if (token === undefined) return await this.refusal(name);
      if (this.closed) {
        await this.giveUp(name, token);
        throw new Error('these leases are closed');
      }
      const lease = new PostgresLease(name, token, this);
      this.held.set(name, lease);
      lease.renewedFrom(sentAt);
      this.scheduleRenewal();
      return { acquired: true, lease };
    } finally {
      this.acquiring.delete(name);
    }
  }

  /** Who holds `name`, and in how long it lapses unless renewed (by the server's clock). */
  private async refusal(name: string): Promise<Acquisition> {
    const { rows } = await sql<{ holder: string; remaining_ms: number }>`
      SELECT holder, greatest(0, ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000))::bigint AS remaining_ms
      FROM coordination_leases WHERE name = ${name}`.execute(this.db);
    const row = rows[0];
    // Gone between the two statements (released and lapsed, or the row never committed): ask again now.
    return { acquired: false, holder: row?.holder ?? '', retryInMs: row?.remaining_ms ?? 0 };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelRenewal?.();
    this.cancelRenewal = undefined;
    await this.renewing;
    await Promise.all([...this.held.values()].map((lease) => lease.release()));
  }

  private scheduleRenewal(): void {
    if (this.cancelRenewal || this.closed) return;
    this.cancelRenewal = this.clock.after(this.renewEveryMs, () => {
      this.renewing = this.renewAll().finally(() => {
        this.renewing = undefined;
        this.cancelRenewal = undefined;
        if (this.held.size > 0) this.scheduleRenewal();
      });
    });
  }

  /**
   * Pushes every held lease's expiry one TTL on, in one statement. A lease whose row no longer has this
   * holder and token was taken over (this replica was paused, or its renewals failed for a TTL): it is lost.
   * A failed statement changes nothing: the next period tries again, and each lease's deadline decides.
   */
  private async renewAll(): Promise<void> {
    const leases = [...this.held.values()];
    if (leases.length === 0) return;
    const sentAt = this.clock.now();
    const held = JSON.stringify(leases.map((lease) => ({ name: lease.name, token: lease.token })));
    let renewed: Set<string>;
    try {
      // The list goes as text cast to jsonb: a parameter typed jsonb would be encoded a second time by Bun.SQL.
      const { rows } = await sql<{ name: string }>`
        UPDATE coordination_leases AS lease
        SET expires_at = clock_timestamp() + ${this.ttlMs}::double precision * interval '1 millisecond'
        FROM jsonb_to_recordset(CAST(${held} AS text)::jsonb) AS mine(name text, token bigint)
        WHERE lease.name = mine.name AND lease.token = mine.token AND lease.holder = ${this.holder}
        RETURNING lease.name`.execute(this.db);
      renewed = new Set(rows.map((row) => row.name));
    } catch (error) {
      this.reportError(error);
      return;
    }
    for (const lease of leases) {
      if (renewed.has(lease.name)) lease.renewedFrom(sentAt);
      else lease.lose('taken over');
    }
  }

  /** @internal A lease no longer held: no more renewals for it. */
  forget(lease: PostgresLease): void {
    if (this.held.get(lease.name) === lease) this.held.delete(lease.name);
    if (this.held.size === 0 && !this.renewing) {
      this.cancelRenewal?.();
      this.cancelRenewal = undefined;
    }
  }

  /**
   * @internal Lets another replica take `name` at once, if this holder and token still hold it. The row
   * then names no holder: a renewal of it still in flight matches nothing, and cannot prolong it.
   */
  async giveUp(name: string, token: number): Promise<void> {
    await sql`
      UPDATE coordination_leases SET holder = '', expires_at = clock_timestamp()
      WHERE name = ${name} AND holder = ${this.holder} AND token = ${token}`.execute(this.db);
  }

  /** @internal Whether the row still names this holder and token; in `trx`, kept so until it ends. */
  async stillHeld(trx: Transaction<Database>, name: string, token: number): Promise<boolean> {
    // FOR SHARE: a takeover's upsert must lock the row exclusively, so it waits for this transaction.
    const { rows } = await sql<{ token: number }>`
      SELECT token FROM coordination_leases
      WHERE name = ${name} AND holder = ${this.holder} AND token = ${token}
      FOR SHARE`.execute(trx);
    return rows.length > 0;
  }
}

class PostgresLease implements Lease {
  private readonly controller = new AbortController();
  private cancelDeadline: (() => void) | undefined;

  constructor(
    readonly name: string,
    readonly token: number,
    private readonly leases: PostgresLeases,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** A renewal sent at `sentAt` succeeded: the lease is this holder's for a TTL from then, by its own clock. */
  renewedFrom(sentAt: number): void {
    if (this.signal.aborted) return;
    this.cancelDeadline?.();
    const clock = this.leases.clock;
    this.cancelDeadline = clock.after(sentAt + this.leases.ttlMs - clock.now(), () => this.lose('not renewed in time'));
  }

  lose(why: LeaseLostError['why']): void {
    if (this.signal.aborted) return;
    this.cancelDeadline?.();
    this.leases.forget(this);
    this.controller.abort(new LeaseLostError(this.name, why));
  }

  async fence(trx: Transaction<Database>): Promise<void> {
    if (this.signal.aborted) throw this.signal.reason;
    if (await this.leases.stillHeld(trx, this.name, this.token)) return;
    this.lose('taken over');
    throw this.signal.reason;
  }

  async release(): Promise<void> {
    if (this.signal.aborted) return;
    this.lose('released');
    await this.leases.giveUp(this.name, this.token);
  }
}
