import { BaseError, decodeFunctionData, type Hex } from 'viem';
import { Abis, Transaction } from 'viem/tempo';
import { BadGatewayError } from '../domain/errors.ts';
import { outboundCause } from '../outbound/errors.ts';
import { shortMessage } from '../outbound/upstream.ts';
import { memoProblem } from './attribution.ts';
import type { PaymentWallet } from './codec.ts';
import { PaymentRefusal, type PaymentTerms } from './payment-terms.ts';
import { causedBy, chainIdOf, PATH_USD, RpcUnreachableError, sameAddress, type TempoRpc } from './tempo.ts';

/**
 * The signed Tempo transaction a credential carries, as knode checks it itself (API-CONTRACT 10.3 points 3
 * and 7; why not mppx: mpp.ts): decoded, re-encoded as the node will hash it, checked to be exactly the
 * payment asked for, simulated, and broadcast, a node's refusal worded for the consumer (402) and an
 * unreachable node kept apart (502: nothing charged).
 */

/** The Tempo transaction type a pull-mode credential carries (0x78, a fee payer's envelope, is not offered). */
const TEMPO_TRANSACTION_PREFIX = '0x76';

export type TempoTransaction = Transaction.TransactionSerializableTempo & { from: Hex };

/** The signed Tempo transaction of a credential, or a refusal saying why it is not one. */
export function decodeTransaction(signed: Hex): TempoTransaction {
  if (!signed.toLowerCase().startsWith(TEMPO_TRANSACTION_PREFIX)) {
    throw new PaymentRefusal('The payment must be a signed Tempo transaction (type 0x76)');
  }
  let transaction: Transaction.TransactionSerializableTempo;
  try {
    transaction = Transaction.deserialize(signed as Transaction.TransactionSerializedTempo);
  } catch {
    throw new PaymentRefusal('The payment transaction cannot be decoded');
  }
  if (!transaction.signature || !transaction.from) throw new PaymentRefusal('The payment transaction is not signed');
  return transaction as TempoTransaction;
}

/** The transaction as the node will hash it (a transaction viem cannot encode again is no payment). */
export async function canonical(transaction: TempoTransaction): Promise<Hex> {
  try {
    return (await Transaction.serialize(transaction)) as Hex;
  } catch {
    throw new PaymentRefusal('The payment transaction cannot be decoded');
  }
}

/**
 * The payment itself (points 3 and 7): on this wallet's chain, exactly one call, to pathUSD, a
 * `transferWithMemo` of exactly the amount to the recipient, with an MPP memo for this realm (any client id,
 * any nonce). A plain `transfer` carries no memo, so it is refused like a memo of another server.
 */
export function checkTransfer(transaction: TempoTransaction, wallet: PaymentWallet, terms: PaymentTerms): void {
  const chainId = chainIdOf(wallet.testnet);
  if (transaction.chainId !== chainId) {
    throw new PaymentRefusal(`The payment transaction is for chain ${transaction.chainId}, not ${chainId}`);
  }
  const calls = transaction.calls ?? [];
  if (calls.length !== 1) throw new PaymentRefusal(`The payment transaction must make exactly one call (it makes ${calls.length})`);
  const [call] = calls as [(typeof calls)[number]];
  if (!sameAddress(call.to ?? undefined, PATH_USD)) throw new PaymentRefusal('The payment transaction does not call pathUSD');
  let decoded: { functionName: string; args: readonly unknown[] };
  try {
    decoded = decodeFunctionData({ abi: Abis.tip20, data: call.data ?? '0x' }) as typeof decoded;
  } catch {
    throw new PaymentRefusal('The payment transaction has no matching payment call: its call is not a TIP-20 transfer');
  }
  if (decoded.functionName !== 'transferWithMemo' && decoded.functionName !== 'transfer') {
    throw new PaymentRefusal(`The payment transaction has no matching payment call: it calls ${decoded.functionName}`);
  }
  const [to, amount, memo] = decoded.args as [Hex, bigint, Hex | undefined];
  if (!sameAddress(to, wallet.wallet_address)) {
    throw new PaymentRefusal(`The payment transaction has no matching payment call: it pays ${to}, not ${wallet.wallet_address}`);
  }
  if (amount !== terms.amount) {
    throw new PaymentRefusal(`The payment transaction has no matching payment call: it pays ${amount} base units, not ${terms.amount}`);
  }
  const problem = memoProblem(memo, terms.realm);
  if (problem) throw new PaymentRefusal(`The payment is not attributed to this endpoint: ${problem}`);
}

/** `eth_call` from the payer: a transfer that would fail is refused before the query runs or anything is sent. */
export async function simulate(rpc: TempoRpc, transaction: TempoTransaction): Promise<void> {
  try {
    await rpc.simulate(transaction);
  } catch (error) {
    throw translate(error, 'The payment transaction would fail');
  }
}

/** `eth_sendRawTransaction` (tempo.ts): the hash the node took, or a refusal in the node's words. */
export async function broadcast(rpc: TempoRpc, raw: Hex): Promise<Hex> {
  try {
    return await rpc.send(raw);
  } catch (error) {
    throw translate(error, 'The Tempo node refused the payment');
  }
}

/** What a failure at the node means for the consumer: a 402 (refused) or a 502 (not decided, nothing charged). */
function translate(error: unknown, refusal: string): Error {
  // The RPC's address is one knode may not call, or it answered too much: say that, not "unreachable".
  const outbound = outboundCause(error);
  if (outbound)
    return new BadGatewayError(`The Tempo RPC was not called: ${outbound.detail}; the payment was not charged`, { cause: error });
  if (causedBy(error, RpcUnreachableError)) {
    return new BadGatewayError('The Tempo RPC could not be reached: the payment was not charged', { cause: error });
  }
  if (error instanceof BaseError) {
    // The node answered: it refused the transaction (a balance too low, a bad nonce...).
    // Its JSON-RPC error message, one short line: never an HTTP body (outbound/upstream.ts).
    return new PaymentRefusal(`${refusal}: ${shortMessage(firstLine(error.shortMessage))}`, /insufficient/i.test(error.message));
  }
  return error instanceof Error ? error : new Error(String(error));
}

function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? text;
}
