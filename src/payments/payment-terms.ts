import { formatUnits } from 'viem';
import { PATH_USD_DECIMALS } from './tempo.ts';

/**
 * The words of a payment that the query side shares with the gateway: what a query costs and where, a
 * refusal (a 402 with a fresh challenge), and USD as pathUSD base units.
 */

/** What one query costs and where: the realm is the endpoint's slug. */
export interface PaymentTerms {
  realm: string;
  /** pathUSD base units (10^-6 USD). */
  amount: bigint;
}

/** The credential cannot pay for this query: a 402 with a fresh challenge (never retried as it is). */
export class PaymentRefusal extends Error {
  override readonly name = 'PaymentRefusal';
  constructor(
    readonly reason: string,
    readonly insufficientBalance = false,
  ) {
    super(reason);
  }
}

/** pathUSD base units of a USD price (the policy's schema allows at most 6 decimals). */
export function toBaseUnits(usd: number): bigint {
  return BigInt(Math.round(usd * 10 ** PATH_USD_DECIMALS));
}

/** Base units as USD, exactly, without trailing zeros: `250000n` is `0.25`. */
export function formatUsd(amount: bigint): string {
  return formatUnits(amount, PATH_USD_DECIMALS);
}
