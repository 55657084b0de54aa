import { PolicyError } from '../domain/errors.ts';
import { type PolicyEntry, policyEntry } from '../domain/policy-metadata.ts';
import type { PaymentWallet } from '../payments/codec.ts';
import type { AcceptedPayment, MppGateway, Settlement } from '../payments/mpp.ts';
import { formatUsd, PaymentRefusal, type PaymentTerms, toBaseUnits } from '../payments/payment-terms.ts';
import type { PolicyOfType } from './codec.ts';
import type { AnsweredQuery, PolicyContext, PolicyHook, QueryOutcome } from './hooks.ts';
import { pricingTier } from './price-tiers.ts';

const MPP = { policy_type: 'mpp', kind: 'payment' } as const;

/**
 * The `mpp` policies of an endpoint (API-CONTRACT 10.3), as one hook: its price list. The most specific
 * policy whose `applied_to` matches the caller is the caller's tier (`price-tiers.ts`); none → 403
 * `NO_PRICING_TIER`; a price of 0 → free. Otherwise the query needs an `X-Payment` credential for the price
 * (per request: the price; per document: `limit × price`, the documents the query asks for), checked before
 * the search, else 402 with a challenge. An accepted credential is only reserved: its transaction is broadcast by `settle`,
 * once the answer is ready, and released by `post` when the query failed before that.
 */
export class MppHook implements PolicyHook {
  private tier: PolicyOfType<'mpp'> | undefined;
  private wallet: PaymentWallet | undefined;
  private terms: PaymentTerms | undefined;
  private units = 0;
  private accepted: AcceptedPayment | undefined;
  /** The payment collected for the answer (charged or pending). */
  private settled: AcceptedPayment | undefined;
  private done: PolicyEntry = policyEntry({ ...MPP, status: 'skipped' });

  constructor(
    private readonly policies: readonly PolicyOfType<'mpp'>[],
    private readonly gateway: Pick<MppGateway, 'wallet' | 'challenge' | 'accept'>,
  ) {}

  async pre(context: PolicyContext): Promise<void> {
    const tier = pricingTier(this.policies, context.senderEmail);
    if (!tier) {
      const reason = `No price of this endpoint applies to ${context.senderEmail}`;
      throw violation(policyEntry({ ...MPP, status: 'rejected', reason_code: 'NO_PRICING_TIER', reason }), reason);
    }
    this.tier = tier;
    if (tier.configuration.price === 0) {
      this.done = this.free();
      return;
    }
    this.wallet = await this.gateway.wallet(context.tenant);
    if (!this.wallet) {
      const reason = 'This endpoint requires payment but its owner has not configured a payment wallet';
      throw violation(policyEntry({ ...MPP, status: 'rejected', reason }), reason);
    }
    // A price per document is per document asked for (API-CONTRACT 10.3 point 4): charging for the documents
    // found would tell an unpaid caller, through the amount, how many documents match its question.
    await this.require(context, tier.configuration.unit_type === 'document' ? context.documentsAsked : 1);
  }

  holdsAnswer(): boolean {
    return this.wallet !== undefined;
  }

  /**
   * The answer is ready: the transaction goes out now. Its entry is `charged` once the receipt is in, or
   * `pending` when the node took the transaction but the receipt is late: the answer is paid for and goes
   * out (a 5xx would make the client pay again), and the reconciler confirms it later.
   */
  async settle(_context: PolicyContext, answered: AnsweredQuery): Promise<void> {
    const accepted = this.accepted;
    const terms = this.terms;
    if (!accepted || !terms) return;
    this.accepted = undefined;
    let settlement: Settlement;
    try {
      settlement = await accepted.settle(answered.usage);
    } catch (error) {
      if (error instanceof PaymentRefusal) throw this.paymentRequired(terms, error);
      throw error;
    }
    this.settled = accepted;
    const pending = settlement.status === 'pending';
    this.done = policyEntry({
      ...MPP,
      status: settlement.status,
      amount: Number(formatUsd(terms.amount)),
      currency: 'USD',
      recipient: this.recipient(),
      transaction: { rail: 'mpp', id: settlement.transaction, reference: null },
      reason: pending ? 'The payment was sent; its receipt had not come when the answer was ready' : null,
      details: this.details(),
    });
  }

  settlementId(): string | undefined {
    return this.settled?.challengeId;
  }

  /**
   * A query that failed before `settle` frees its credential: nothing was broadcast. One that succeeded
   * marks its payment delivered: the same credential again is then a replay.
   */
  async post(_context: PolicyContext, outcome: QueryOutcome): Promise<void> {
    const accepted = this.accepted;
    this.accepted = undefined;
    try {
      if (accepted) await accepted.release();
      if (this.settled && outcome.succeeded) await this.settled.delivered();
    } finally {
      (accepted ?? this.settled)?.ended();
    }
  }

  entry(): PolicyEntry {
    return this.done;
  }

  /** The query costs `units × price`: it needs a credential for that, else a challenge (402). */
  private async require(context: PolicyContext, units: number): Promise<void> {
    const tier = this.tier as PolicyOfType<'mpp'>;
    const wallet = this.wallet as PaymentWallet;
    this.units = units;
    const terms: PaymentTerms = { realm: context.endpoint.slug, amount: toBaseUnits(tier.configuration.price) * BigInt(units) };
    this.terms = terms;
    const credential = context.paymentCredential;
    if (!credential) throw this.paymentRequired(terms, undefined);
    try {
      this.accepted = await this.gateway.accept(wallet, terms, credential, {
        tenantId: context.tenant.id,
        endpointId: context.endpoint.id,
        senderEmail: context.senderEmail,
      });
    } catch (error) {
      if (error instanceof PaymentRefusal) throw this.paymentRequired(terms, error);
      throw error;
    }
  }

  /**
   * 402 with a fresh challenge (API-CONTRACT 10.3): for a query that brought no credential, or one that
   * cannot pay for it (the reason is in the entry, and the refusal is written to the usage).
   */
  private paymentRequired(terms: PaymentTerms, refusal: PaymentRefusal | undefined): PolicyError {
    const challenge = this.gateway.challenge(this.wallet as PaymentWallet, terms);
    const price = formatUsd(terms.amount);
    const required = `Payment of $${price} required to query this endpoint`;
    // A client shows `detail` only: a refused payment says why there (API-CONTRACT 10.3 point 10).
    const detail = refusal ? `${required} (the payment sent was refused: ${refusal.reason})` : required;
    const reason = refusal ? `Payment refused: ${refusal.reason}` : required;
    const entry = policyEntry({
      ...MPP,
      status: 'rejected',
      amount: Number(price),
      currency: 'USD',
      recipient: this.recipient(),
      reason_code: refusal?.insufficientBalance ? 'INSUFFICIENT_BALANCE' : 'PAYMENT_REQUIRED',
      reason,
      details: { ...this.details(), challenge_id: challenge.id, expires: challenge.expires },
    });
    return new PolicyError('payment_required', 'Payment Required', reason, entry, 'payment_required', undefined, {
      detail,
      challenge: challenge.header,
      recorded: refusal !== undefined,
    });
  }

  private free(): PolicyEntry {
    return policyEntry({ ...MPP, status: 'free', amount: 0, currency: 'USD', details: this.details() });
  }

  private recipient(): PolicyEntry['recipient'] {
    return { username: null, email: null, wallet_address: this.wallet?.wallet_address ?? null };
  }

  private details(): Record<string, unknown> {
    const configuration = this.tier?.configuration;
    if (!configuration) return {};
    return {
      policy: this.tier?.name,
      unit_type: configuration.unit_type,
      unit_price: configuration.price,
      ...(configuration.unit_type === 'document' ? { documents: this.units } : {}),
    };
  }
}

/** Refused for what the endpoint is, not for a payment: 403 `policy_violation`, written to the usage. */
function violation(entry: PolicyEntry, reason: string): PolicyError {
  return new PolicyError('refused', 'Permission Denied', reason, entry, 'policy_violation', undefined, { recorded: true });
}
