import { type Client, createClient, custom, type EIP1193RequestFn, type Hex, http, type Transport } from 'viem';
import { tempo as tempoMainnet, tempoModerato } from 'viem/tempo/chains';

/**
 * The Tempo network a wallet receives on (API-CONTRACT 10.3): its chain, its public RPC, and a viem client
 * for mppx. Payments are in pathUSD (a TIP-20 token with 6 decimals) on both networks.
 */

export const PATH_USD = '0x20c0000000000000000000000000000000000000';
export const PATH_USD_DECIMALS = 6;

export const TESTNET_CHAIN_ID = tempoModerato.id; // 42431
export const MAINNET_CHAIN_ID = tempoMainnet.id; // 4217

export const PUBLIC_RPC = { testnet: 'https://rpc.moderato.tempo.xyz', mainnet: 'https://rpc.tempo.xyz' } as const;

/** How long one RPC call may take, and how long a broadcast transaction may take to get its receipt. */
export const RPC_TIMEOUT_MS = 10_000;
export const RECEIPT_TIMEOUT_MS = 10_000;
const RECEIPT_POLL_MS = 250;

export function chainIdOf(testnet: boolean): number {
  return testnet ? TESTNET_CHAIN_ID : MAINNET_CHAIN_ID;
}

/** The node could not be reached, or answered with an HTTP error or not in time: nothing was decided there. */
export class RpcUnreachableError extends Error {
  override readonly name = 'RpcUnreachableError';
}

/** What happened to one settlement's transaction at the node: whether it was ever accepted for broadcast. */
export interface BroadcastState {
  /** The hash `eth_sendRawTransaction` answered: from then on the payment may be on its way. */
  sent: Hex | undefined;
}

export interface TempoClientOptions {
  rpcUrl: string;
  testnet: boolean;
  receiptTimeoutMs?: number;
  state?: BroadcastState;
}

/**
 * A viem client of the wallet's network. mppx broadcasts with `eth_sendRawTransactionSync` (EIP-7966, the
 * receipt in one call); this transport answers that call as the contract describes it for any node:
 * `eth_sendRawTransaction`, then `eth_getTransactionReceipt` until the receipt comes (about 10 s). mppx
 * then checks the receipt itself (status, the Transfer log of the currency to the recipient for the amount,
 * the memo bound to the challenge). `state.sent` records whether the node took the transaction.
 */
export function tempoClient(options: TempoClientOptions): Client {
  const chain = options.testnet ? tempoModerato : tempoMainnet;
  const base = http(options.rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: 0 });
  const receiptTimeoutMs = options.receiptTimeoutMs ?? RECEIPT_TIMEOUT_MS;
  const transport: Transport = (config) => {
    const inner = base(config);
    const call = async (method: string, params: unknown): Promise<unknown> => {
      try {
        return await (inner.request as EIP1193RequestFn)({ method, params } as never);
      } catch (error) {
        if (isUnreachable(error)) throw new RpcUnreachableError(`Tempo RPC ${options.rpcUrl} is unreachable`, { cause: error });
        throw error;
      }
    };
    const request = async ({ method, params }: { method: string; params?: unknown }): Promise<unknown> => {
      if (method !== 'eth_sendRawTransactionSync') return call(method, params);
      const [serialized] = params as [Hex];
      const hash = (await call('eth_sendRawTransaction', [serialized])) as Hex;
      if (options.state) options.state.sent = hash;
      const deadline = Date.now() + receiptTimeoutMs;
      for (;;) {
        const receipt = await call('eth_getTransactionReceipt', [hash]);
        if (receipt) return receipt;
        if (Date.now() >= deadline) throw new ReceiptTimeoutError(hash, receiptTimeoutMs);
        await Bun.sleep(RECEIPT_POLL_MS);
      }
    };
    return custom({ request }, { retryCount: 0 })(config);
  };
  return createClient({ chain, transport });
}

/** The transaction was accepted but no receipt came in time: it may still be mined. */
export class ReceiptTimeoutError extends Error {
  override readonly name = 'ReceiptTimeoutError';
  constructor(
    readonly hash: Hex,
    timeoutMs: number,
  ) {
    super(`No receipt for transaction ${hash} within ${timeoutMs / 1000} s`);
  }
}

/** viem's words for "the request never got a JSON-RPC answer": no connection, an HTTP error, a timeout. */
function isUnreachable(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause.name === 'HttpRequestError' || cause.name === 'TimeoutError' || cause.name === 'RpcUnreachableError') return true;
  }
  return false;
}

/** Whether an error, or one of its causes, is of one of these classes (viem and mppx wrap what they throw). */
export function causedBy<T extends Error>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof type) return cause;
  }
  return undefined;
}
