import { BaseError, type Client, createClient, type Hex, http, keccak256, parseEventLogs } from 'viem';
import { call } from 'viem/actions';
import { Abis, type Transaction } from 'viem/tempo';
import { tempo as tempoMainnet, tempoModerato } from 'viem/tempo/chains';

/**
 * The Tempo network a wallet receives on (API-CONTRACT 10.3): its chain, its public RPC, and the few
 * JSON-RPC calls a settlement makes there (simulate, broadcast, receipt, whether the node knows a
 * transaction). Payments are in pathUSD (a TIP-20 token with 6 decimals) on both networks.
 */

export const PATH_USD = '0x20c0000000000000000000000000000000000000';
export const PATH_USD_DECIMALS = 6;

export const TESTNET_CHAIN_ID = tempoModerato.id; // 42431
const MAINNET_CHAIN_ID = tempoMainnet.id; // 4217

const PUBLIC_RPC = { testnet: 'https://rpc.moderato.tempo.xyz', mainnet: 'https://rpc.tempo.xyz' } as const;

/** How long one RPC call may take, and how long a broadcast transaction may take to get its receipt. */
const RPC_TIMEOUT_MS = 10_000;
export const RECEIPT_TIMEOUT_MS = 10_000;
export const RECEIPT_POLL_MS = 250;

export function chainIdOf(testnet: boolean): number {
  return testnet ? TESTNET_CHAIN_ID : MAINNET_CHAIN_ID;
}

export function rpcUrlOf(wallet: { rpc_url: string | null; testnet: boolean }): string {
  return wallet.rpc_url ?? PUBLIC_RPC[wallet.testnet ? 'testnet' : 'mainnet'];
}

/** The fetch a tenant's RPC calls go through (outbound/fetch.ts: addresses checked, answers bounded). */
export type RpcFetcher = (tenantId: string) => Promise<(input: string | URL | Request, init?: RequestInit) => Promise<Response>>;

/** The node could not be reached, or answered with an HTTP error or not in time: nothing was decided there. */
export class RpcUnreachableError extends Error {
  override readonly name = 'RpcUnreachableError';
}

/** What a receipt says about one expected TIP-20 transfer. */
export type ReceiptVerdict =
  | { status: 'confirmed' }
  /** Mined, but it moved no money to the recipient (reverted, or another transfer): the reason says which. */
  | { status: 'failed'; reason: string };

export interface ExpectedTransfer {
  currency: Hex;
  from: Hex;
  to: Hex;
  amount: bigint;
}

/**
 * The JSON-RPC calls of a settlement on one node. Transport failures (no connection, an HTTP error, a
 * timeout) are RpcUnreachableError: nothing was decided; an answer of the node that is an error (it
 * refuses the transaction) is viem's error with the node's words.
 */
export class TempoRpc {
  private readonly client: Client;

  constructor(
    readonly options: {
      rpcUrl: string;
      testnet: boolean;
      /** The outbound module's fetch for the wallet's tenant (outbound/fetch.ts): viem's calls go through it too. */
      fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
    },
  ) {
    this.client = createClient({
      chain: options.testnet ? tempoModerato : tempoMainnet,
      transport: http(options.rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: 0, fetchFn: options.fetch }),
    });
  }

  /**
   * `eth_call` of the signed transaction from its payer (mppx's simulation: the transaction as it is,
   * without its signatures): a transfer that would revert (a balance too low) is refused before anything
   * is sent.
   */
  async simulate(transaction: Transaction.TransactionSerializableTempo): Promise<void> {
    await this.guard(() =>
      call(this.client, {
        ...transaction,
        account: transaction.from,
        calls: transaction.calls,
        feePayerSignature: undefined,
      } as never),
    );
  }

  /**
   * `eth_sendRawTransaction`: the hash the node answers once it took the transaction. A node that already
   * has it (the same bytes sent before, by this process or an earlier one) took it too: its hash.
   */
  async send(raw: Hex): Promise<Hex> {
    try {
      return await this.request<Hex>('eth_sendRawTransaction', [raw]);
    } catch (error) {
      if (error instanceof BaseError && /already known|known transaction/i.test(error.message)) return keccak256(raw);
      throw error;
    }
  }

  /** The receipt of a transaction, or null while it is not mined. */
  receipt(hash: Hex): Promise<RpcReceipt | null> {
    return this.request<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
  }

  /** Whether the node knows the transaction at all (pending or mined). */
  async knows(hash: Hex): Promise<boolean> {
    return (await this.request<unknown>('eth_getTransactionByHash', [hash])) !== null;
  }

  private request<T>(method: string, params: unknown[]): Promise<T> {
    return this.guard(() => this.client.request({ method, params } as never) as Promise<T>);
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isUnreachable(error)) throw new RpcUnreachableError(`Tempo RPC ${this.options.rpcUrl} is unreachable`, { cause: error });
      throw error;
    }
  }
}

/** The fields of a JSON-RPC receipt a settlement reads. */
export interface RpcReceipt {
  transactionHash: Hex;
  status: Hex;
  logs: { address: Hex; topics: [Hex, ...Hex[]] | []; data: Hex }[];
}

/**
 * Whether a receipt pays what was expected: status `0x1` and a TIP-20 `Transfer` log of the currency from
 * the payer to the recipient for exactly the amount (the contract's check; a memo changes nothing here).
 */
export function verdictOf(receipt: RpcReceipt, expected: ExpectedTransfer): ReceiptVerdict {
  if (receipt.status !== '0x1') return { status: 'failed', reason: `The payment transaction ${receipt.transactionHash} reverted` };
  const transfers = parseEventLogs({ abi: Abis.tip20, eventName: 'Transfer', logs: receipt.logs as never });
  const paid = transfers.some(
    (log) =>
      sameAddress(log.address, expected.currency) &&
      sameAddress(log.args.from, expected.from) &&
      sameAddress(log.args.to, expected.to) &&
      log.args.amount === expected.amount,
  );
  if (paid) return { status: 'confirmed' };
  return { status: 'failed', reason: `The payment transaction ${receipt.transactionHash} did not transfer the amount to the recipient` };
}

export function sameAddress(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a.toLowerCase() === b.toLowerCase();
}

/** viem's words for "the request never got a JSON-RPC answer": no connection, an HTTP error, a timeout. */
function isUnreachable(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause.name === 'HttpRequestError' || cause.name === 'TimeoutError' || cause.name === 'RpcUnreachableError') return true;
  }
  return false;
}

/** Whether an error, or one of its causes, is of one of these classes (viem wraps what it throws). */
export function causedBy<T extends Error>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof type) return cause;
  }
  return undefined;
}
