import { BaseError } from 'viem';
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
 */

/** How often the journal is looked at for rows still on their way. */
const RECONCILE_INTERVAL_MS = 10_000;

interface ReconcilerLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface SettlementReconcilerDeps {
  journal: SettlementJournal;
  /** Writes the usage row of a paid answer whose process did not, once (query/ implements it). */
  writeUsage(entry: SettlementEntry): Promise<void>;
  /** Notes in the usage row of a `pending` answer that its payment failed on chain. */
  paymentFailed(entry: SettlementEntry, reason: string): Promise<void>;
  log: ReconcilerLog;
  intervalMs?: number;
  /** The outbound module's fetch for a tenant: the Tempo RPC is called through it (outbound/). */
  outbound: RpcFetcher;
}

export class SettlementReconciler {
  /** Rows created before this belong to an earlier process: nothing of this one is still working on them. */
  private readonly startedAt = new Date().toISOString();
  private timer: ReturnType<typeof setInterval> | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: SettlementReconcilerDeps) {}

  /** Reconciles now (start-up), then every interval, in the background. */
  start(): void {
    void this.reconcile();
    this.timer = setInterval(() => void this.reconcile(), this.deps.intervalMs ?? RECONCILE_INTERVAL_MS);
    this.timer.unref?.();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
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
      for (const entry of await this.deps.journal.unsettled()) {
        try {
          await this.settle(entry);
        } catch (error) {
          // The RPC may be down: the row stays as it is and the next pass tries again.
          this.deps.log.warn({ err: error, challenge: entry.challenge_id, state: entry.state }, 'a payment could not be reconciled yet');
        }
      }
      // This process's queries write their own usage rows; only a stopped process's are written here.
      for (const entry of (await this.deps.journal.withoutUsage()).filter((row) => row.created_at < this.startedAt)) {
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

  private async settle(entry: SettlementEntry): Promise<void> {
    const earlier = entry.created_at < this.startedAt;
    const journal = this.deps.journal;
    if (entry.state === 'reserved') {
      if (!earlier) return; // a query of this process is running with it
      await journal.release(entry.challenge_id);
      this.deps.log.info({ challenge: entry.challenge_id }, 'released a payment reservation left by a stopped process');
      return;
    }
    if (entry.state === 'sending' && !earlier) return; // being sent right now
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
    } else {
      await this.deps.journal.release(entry.challenge_id);
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
