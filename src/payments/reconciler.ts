import { BaseError } from 'viem';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import type { SettlementEntry, SettlementJournal } from './settlement-journal.ts';
import { PATH_USD, type RpcFetcher, type RpcReceipt, TempoRpc, verdictOf } from './tempo.ts';

/**
 * Finishes the settlements the query that made them could not (API-CONTRACT 10.3 point 6): a receipt that
 * came after the answer went out `pending`, and whatever a stopped process left in the journal.
 * - `reserved` rows of an earlier process (its query never reached the broadcast): released, their
 *   single-use keys freed; no money moved, so the credential is good again.
 * - `sending` rows of an earlier process: the chain is asked. A receipt settles it; a transaction the node
 *   knows is `sent`; one it never saw is released like a reservation, rather than sent now: its caller never
 *   got the answer, and SyftHub's clients retry with a new payment, so sending it would charge for nothing
 *   (the same caller may still retry with the same credential and pay once, normally).
 * - `sent` rows: a receipt makes them `confirmed` (or `failed`, when it pays nothing); a transaction the node
 *   no longer knows (dropped from its pool) is sent again: the same signed bytes can only be mined once,
 *   and the caller has its answer.
 * And every paid answer (`sent` or `confirmed`) gets its usage row if its process died before writing it.
 *
 * Whose rows: a row is acted on only once the replica that made it is gone (`ReplicaLiveness`): on a single
 * node, an earlier process; in cluster mode, a replica whose `replica:<id>` lease lapsed or was released,
 * never a live one's row, however old. A replica's own `sent` rows (late receipts) are its own reconciler's
 * job, on every replica; the rows of gone replicas are one replica's at a time (`adopt`, under the
 * `singleton:reconciler` lease in services.ts). A row that names no replica (made before they were
 * recorded) is judged by its age, as before: created before this reconciler started, it is an earlier process's.
 */

/** How often the journal is looked at for rows still on their way. */
const RECONCILE_INTERVAL_MS = 10_000;

interface ReconcilerLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/** Which replicas are gone (coordination/replica-liveness.ts implements it for both engines). */
export interface ReplicaLiveness {
  /** This replica's id, as its journal writes it in the rows it makes. */
  readonly self: string;
  /** Of these other replicas, the ones gone: stopped (a single node's earlier processes), or whose liveness lease lapsed. */
  gone(replicas: readonly string[]): Promise<ReadonlySet<string>>;
}

/** A row's maker: this replica (its late receipts only), a gone one (everything), or another live one (nothing). */
type Owner = 'own' | 'gone' | 'live';

export interface SettlementReconcilerDeps {
  journal: SettlementJournal;
  /** Who made each row and whether it is gone; without it, a row is an earlier process's when created before this reconciler. */
  replicas?: ReplicaLiveness;
  /**
   * Rows of gone replicas are reconciled only between `adopt()` and `relinquish()` (one replica at a time, under
   * a lease); false (the default): always, as a lone process does.
   */
  adoptsUnderLease?: boolean;
  /** Writes the usage row of a paid answer whose process did not, once (query/ implements it). */
  writeUsage(entry: SettlementEntry): Promise<void>;
  /** Notes in the usage row of a `pending` answer that its payment failed on chain. */
  paymentFailed(entry: SettlementEntry, reason: string): Promise<void>;
  log: ReconcilerLog;
  intervalMs?: number;
  /** The outbound module's fetch for a tenant: the Tempo RPC is called through it (outbound/). */
  outbound: RpcFetcher;
  /** When this reconciler started (the real one unless a test brings its own). */
  clock?: Clock;
}

export class SettlementReconciler {
  /** Rows created before this belong to an earlier process: nothing of this one is still working on them. */
  private readonly startedAt: string;
  private timer: ReturnType<typeof setInterval> | undefined;
  private running: Promise<void> | undefined;
  /** Whether this replica reconciles gone replicas' rows now. */
  private adopting: boolean;

  constructor(private readonly deps: SettlementReconcilerDeps) {
    this.adopting = !deps.adoptsUnderLease;
    this.startedAt = isoNow(deps.clock ?? systemClock);
  }

  /** Reconciles now (start-up), then every interval, in the background. */
  start(): void {
    void this.reconcile();
    this.timer = setInterval(() => void this.reconcile(), this.deps.intervalMs ?? RECONCILE_INTERVAL_MS);
    this.timer.unref?.();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.adopting = false;
    await this.running;
  }

  /** From now on the rows of gone replicas are this replica's to finish (it took the lease): a pass starts at once. */
  adopt(): void {
    this.adopting = true;
    void (this.running ?? Promise.resolve()).then(() => this.reconcile());
  }

  /** Gone replicas' rows are no longer this replica's (the lease was lost); resolves once no pass acts on one. */
  async relinquish(): Promise<void> {
    this.adopting = false;
    await this.running;
  }

  /** One pass over the journal; passes never overlap (a second caller waits for the running one). */
  reconcile(): Promise<void> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(): Promise<void> {
    try {
      const unsettled = await this.deps.journal.unsettled();
      const ownerOf = await this.owners(unsettled);
      for (const entry of unsettled) {
        const owner = ownerOf(entry);
        // `adopting` is read at each row: the lease may be lost in the middle of a pass.
        if (owner === 'live' || (owner === 'gone' && !this.adopting) || (owner === 'own' && entry.state !== 'sent')) continue;
        try {
          await this.settle(entry, owner);
        } catch (error) {
          // The RPC may be down: the row stays as it is and the next pass tries again.
          this.deps.log.warn({ err: error, challenge: entry.challenge_id, state: entry.state }, 'a payment could not be reconciled yet');
        }
      }
      // A live replica's queries write their own usage rows; only a gone one's are written here.
      const withoutUsage = this.adopting ? await this.deps.journal.withoutUsage() : [];
      const usageOwnerOf = await this.owners(withoutUsage);
      for (const entry of withoutUsage.filter((row) => usageOwnerOf(row) === 'gone')) {
        if (!this.adopting) break;
        try {
          await this.deps.writeUsage(entry);
        } catch (error) {
          this.deps.log.error({ err: error, challenge: entry.challenge_id }, 'the usage of a paid answer could not be written');
        }
      }
    } catch (error) {
      this.deps.log.error({ err: error }, 'the settlement journal could not be read');
    }
  }

  /**
   * Sorts rows by who made them: the liveness of the other replicas named is asked once per pass, and only
   * while adopting (otherwise their rows are left alone whether they are gone or not).
   */
  private async owners(rows: readonly SettlementEntry[]): Promise<(entry: SettlementEntry) => Owner> {
    const replicas = this.deps.replicas;
    const named = replicas && this.adopting ? rows.map((row) => row.replica) : [];
    const others = [...new Set(named)].filter((id) => id !== null && id !== replicas?.self);
    const gone = replicas && others.length > 0 ? await replicas.gone(others as string[]) : new Set<string>();
    return (entry) => {
      if (!replicas || entry.replica === null) return entry.created_at < this.startedAt ? 'gone' : 'own';
      if (entry.replica === replicas.self) return 'own';
      return gone.has(entry.replica) ? 'gone' : 'live';
    };
  }

  /** A gone replica's row (any state), or this replica's own `sent` one (its late receipt). */
  private async settle(entry: SettlementEntry, owner: Owner): Promise<void> {
    const journal = this.deps.journal;
    if (owner !== 'gone' && entry.state !== 'sent') return; // a query of a live replica is running with it, or sending it now
    if (entry.state === 'reserved') {
      // Only while still reserved: its replica, taken for gone, might have sent it meanwhile.
      if (await journal.releaseFrom(entry.challenge_id, ['reserved'])) {
        this.deps.log.info({ challenge: entry.challenge_id }, 'released a payment reservation left by a stopped process');
      }
      return;
    }
    const rpc = new TempoRpc({ rpcUrl: entry.rpc_url, testnet: entry.testnet, fetch: await this.deps.outbound(entry.tenant_id) });
    const receipt = await rpc.receipt(entry.transaction_hash);
    if (receipt) return this.recordReceipt(entry, receipt);
    const known = await rpc.knows(entry.transaction_hash);
    if (entry.state === 'sending') return this.settleSending(entry, known);
    if (!known) await this.resend(entry, rpc);
  }

  /** The chain has the transaction: the payment is confirmed, or failed (and its usage row says so). */
  private async recordReceipt(entry: SettlementEntry, receipt: RpcReceipt): Promise<void> {
    const verdict = verdictOf(receipt, { currency: PATH_USD, from: entry.payer, to: entry.recipient, amount: entry.amount });
    if (verdict.status === 'confirmed') {
      await this.deps.journal.confirmed(entry.challenge_id);
      this.deps.log.info({ challenge: entry.challenge_id, transaction: entry.transaction_hash }, 'a pending payment was confirmed');
    } else {
      await this.deps.journal.failed(entry.challenge_id, verdict.reason);
      if (entry.usage_written) await this.deps.paymentFailed(entry, verdict.reason);
      this.deps.log.warn({ challenge: entry.challenge_id, reason: verdict.reason }, 'a pending payment failed on chain');
    }
  }

  /** A payment a stopped process was sending: sent when the node knows it, released when it never received it. */
  private async settleSending(entry: SettlementEntry, known: boolean): Promise<void> {
    if (known) {
      await this.deps.journal.sent(entry.challenge_id);
    } else if (await this.deps.journal.releaseFrom(entry.challenge_id, ['sending'])) {
      this.deps.log.info({ challenge: entry.challenge_id }, 'released a payment the node never received (its process stopped)');
    }
  }

  /** A sent payment the node has forgotten is sent again; one the node refuses failed. */
  private async resend(entry: SettlementEntry, rpc: TempoRpc): Promise<void> {
    try {
      await rpc.send(entry.raw_transaction);
    } catch (error) {
      if (!(error instanceof BaseError)) throw error;
      // The node refuses the very transaction it took before (its nonce was spent otherwise): it paid nothing.
      const reason = `The payment transaction ${entry.transaction_hash} was dropped: ${error.shortMessage}`;
      await this.deps.journal.failed(entry.challenge_id, reason);
      if (entry.usage_written) await this.deps.paymentFailed(entry, reason);
    }
  }
}
