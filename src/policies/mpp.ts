import { PolicyError } from '../domain/errors.ts';
import { type PolicyEntry, policyEntry } from '../domain/policy-metadata.ts';
import type { PaymentWallet } from '../payments/codec.ts';
import { type AcceptedPayment, formatUsd, type MppGateway, PaymentRefusal, type PaymentTerms, toBaseUnits } from '../payments/mpp.ts';
import type { PolicyOfType } from './codec.ts';
import type { PolicyContext, PolicyHook, QueryOutcome } from './hooks.ts';
import { pricingTier } from './price-tiers.ts';

const MPP = { policy_type: 'mpp', kind: 'payment' } as const;

/**
 * The `mpp` policies of an endpoint (API-CONTRACT 10.3), as one hook: its price list. The most specific
 * policy whose `applied_to` matches the caller is the caller's tier (`price-tiers.ts`); none → 403
 * `NO_PRICING_TIER`; a price of 0 → free. Otherwise the query needs an `X-Payment` credential for the price
 * (per request: checked before the search; per document: `documents × price`, checked after it), else
 * 402 with a challenge. An accepted credential is only reserved: its transaction is broadcast by `settle`,
 * once the answer is ready, and released by `post` when the query failed before that.
 */
export class MppHook implements PolicyHook {
  private tier: PolicyOfType<'mpp'> | undefined;
  private wallet: PaymentWallet | undefined;
  private terms: PaymentTerms | undefined;
  private units = 0;
  private accepted: AcceptedPayment | undefined;
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
    if (tier.configuration.unit_type === 'request') await this.require(context, 1);
  }

  /** A price per document: what the search found decides the amount, and so the challenge. */
  async afterSearch(context: PolicyContext, found: { documents: number }): Promise<void> {
    if (!this.wallet || this.tier?.configuration.unit_type !== 'document') return;
    if (found.documents === 0) {
      this.done = this.free();
      return;
    }
    await this.require(context, found.documents);
  }

  holdsAnswer(): boolean {
    return this.wallet !== undefined;
  }

  /** The answer is ready: the transaction goes out now, and the query is charged once its receipt is in. */
  async settle(): Promise<void> {
    const accepted = this.accepted;
    const terms = this.terms;
    if (!accepted || !terms) return;
    this.accepted = undefined;
    let transaction: string;
    try {
      transaction = await accepted.settle();
    } catch (error) {
      if (error instanceof PaymentRefusal) throw this.paymentRequired(terms, error);
      throw error;
    }
    this.done = policyEntry({
      ...MPP,
      status: 'charged',
      amount: Number(formatUsd(terms.amount)),
      currency: 'USD',
      recipient: this.recipient(),
      transaction: { rail: 'mpp', id: transaction, reference: null },
      details: this.details(),
    });
  }

  /** A query that failed before `settle` frees its credential: nothing was broadcast. */
  async post(_context: PolicyContext, _outcome: QueryOutcome): Promise<void> {
    const accepted = this.accepted;
    this.accepted = undefined;
    if (accepted) await accepted.release();
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
      this.accepted = await this.gateway.accept(wallet, terms, credential);
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
    const detail = `Payment of $${price} required to query this endpoint`;
    const reason = refusal ? `Payment refused: ${refusal.reason}` : detail;
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
