/**
 * A Tempo JSON-RPC node for tests, on a random loopback port: enough of one for mppx's client to prepare
 * and sign a payment (chain id, block, fees, gas; `eth_fillTransaction` is refused so it falls back) and
 * for knode to simulate (`eth_call`), broadcast (`eth_sendRawTransaction`) and confirm it
 * (`eth_getTransactionReceipt`). A broadcast transaction is decoded (viem/tempo), and its receipt carries,
 * per TIP-20 `transfer`/`transferWithMemo` call, the `Transfer` and `TransferWithMemo` logs a real node
 * emits, which mppx checks against the challenge (amount, currency, recipient, memo binding).
 * `eth_sendRawTransactionSync` is not offered, so the contract's path (send, then poll the receipt) is the
 * one exercised; `eth_getTransactionByHash` says whether a transaction was taken. Tests read what was
 * broadcast (the money that moved), make a method fail, take the node down, hold broadcasts (the request
 * waits, and the transaction is not taken until released) or withhold receipts (the transaction is taken
 * but not mined yet), to stop knode at either side of the broadcast.
 */
import type { Server } from 'bun';
import { decodeFunctionData, encodeAbiParameters, encodeEventTopics, type Hex, keccak256, toHex } from 'viem';
import { Abis, Transaction } from 'viem/tempo';

export interface Broadcast {
  hash: Hex;
  from: Hex;
  raw: Hex;
  /** The TIP-20 transfers the transaction makes. */
  transfers: { token: Hex; to: Hex; amount: bigint; memo: Hex | undefined }[];
}

export type RpcFailure =
  /** The node answers with an HTTP error (a proxy in front of a dead node). */
  | { status: number }
  /** The node answers with a JSON-RPC error (the transaction is refused). */
  | { code: number; message: string };

export interface FakeTempoRpc {
  readonly url: string;
  readonly chainId: number;
  /** Transactions accepted by `eth_sendRawTransaction`, in order: what was charged. */
  readonly broadcasts: Broadcast[];
  /** Every method called, in order. */
  readonly calls: string[];
  /** Makes a method fail from now on (undefined: works again). */
  fail(method: string, failure: RpcFailure | undefined): void;
  /** Receipts of later broadcasts say the transaction reverted (status 0x0, no logs). */
  revertBroadcasts(revert: boolean): void;
  /** Receipts are not given out (the transaction is still pending) until this is turned off. */
  withholdReceipts(withhold: boolean): void;
  /**
   * `eth_sendRawTransaction` requests wait, their transaction not taken, until `releaseBroadcasts`: `take`
   * then takes them (and answers), else drops them (as a node that never got them).
   */
  holdBroadcasts(): void;
  releaseBroadcasts(options: { take: boolean }): void;
  /** Broadcast requests waiting now. */
  readonly heldBroadcasts: number;
  /** Stops answering (connections refused) until `up`. */
  down(): Promise<void>;
  up(): void;
  close(): Promise<void>;
}

const BLOCK_HASH = `0x${'ab'.repeat(32)}` as Hex;

export function startFakeTempoRpc(options: { chainId?: number } = {}): FakeTempoRpc {
  const chainId = options.chainId ?? 42431;
  const broadcasts: Broadcast[] = [];
  const receipts = new Map<string, Record<string, unknown>>();
  const calls: string[] = [];
  const failures = new Map<string, RpcFailure>();
  let revert = false;
  let withhold = false;
  let holding = false;
  const held: ((take: boolean) => void)[] = [];
  let server: Server<undefined> | undefined;
  let port = 0;

  const answer = (method: string, params: unknown[]): unknown => {
    switch (method) {
      case 'eth_chainId':
        return toHex(chainId);
      case 'eth_blockNumber':
        return '0x10';
      case 'eth_getBlockByNumber':
        return {
          number: '0x10',
          hash: BLOCK_HASH,
          parentHash: `0x${'00'.repeat(32)}`,
          timestamp: toHex(Math.floor(Date.now() / 1000)),
          baseFeePerGas: '0x1',
          gasLimit: '0x1c9c380',
          gasUsed: '0x0',
          transactions: [],
        };
      case 'eth_maxPriorityFeePerGas':
      case 'eth_gasPrice':
        return '0x1';
      case 'eth_estimateGas':
        return '0x30d40';
      case 'eth_getTransactionCount':
        return '0x0';
      case 'eth_call':
        return '0x';
      case 'eth_sendRawTransaction':
        return broadcast(params[0] as Hex);
      case 'eth_getTransactionReceipt':
        return withhold ? null : (receipts.get(String(params[0]).toLowerCase()) ?? null);
      case 'eth_getTransactionByHash': {
        const taken = broadcasts.find((item) => item.hash.toLowerCase() === String(params[0]).toLowerCase());
        return taken ? { hash: taken.hash, from: taken.from, input: '0x', nonce: '0x0', blockHash: null, blockNumber: null } : null;
      }
      default:
        throw Object.assign(new Error(`the method ${method} does not exist/is not available`), { code: -32601 });
    }
  };

  const broadcast = (raw: Hex): Hex => {
    const transaction = Transaction.deserialize(raw as Transaction.TransactionSerializedTempo);
    const from = transaction.from as Hex;
    const hash = keccak256(raw);
    const transfers: Broadcast['transfers'] = [];
    for (const call of transaction.calls ?? []) {
      if (!call.to || !call.data) continue;
      try {
        const decoded = decodeFunctionData({ abi: Abis.tip20, data: call.data });
        if (decoded.functionName === 'transfer') {
          const [to, amount] = decoded.args as [Hex, bigint];
          transfers.push({ token: call.to, to, amount, memo: undefined });
        } else if (decoded.functionName === 'transferWithMemo') {
          const [to, amount, memo] = decoded.args as [Hex, bigint, Hex];
          transfers.push({ token: call.to, to, amount, memo });
        }
      } catch {}
    }
    broadcasts.push({ hash, from, raw, transfers });
    receipts.set(hash.toLowerCase(), receipt(hash, from, revert ? [] : transfers, revert));
    return hash;
  };

  const receipt = (hash: Hex, from: Hex, transfers: Broadcast['transfers'], reverted: boolean): Record<string, unknown> => {
    const logs: Record<string, unknown>[] = [];
    const log = (token: Hex, topics: Hex[], data: Hex) =>
      logs.push({
        address: token,
        topics,
        data,
        blockHash: BLOCK_HASH,
        blockNumber: '0x10',
        transactionHash: hash,
        transactionIndex: '0x0',
        logIndex: toHex(logs.length),
        removed: false,
      });
    const amountData = (amount: bigint) => encodeAbiParameters([{ type: 'uint256' }], [amount]);
    for (const transfer of transfers) {
      log(
        transfer.token,
        encodeEventTopics({ abi: Abis.tip20, eventName: 'Transfer', args: { from, to: transfer.to } }) as Hex[],
        amountData(transfer.amount),
      );
      if (transfer.memo) {
        log(
          transfer.token,
          encodeEventTopics({
            abi: Abis.tip20,
            eventName: 'TransferWithMemo',
            args: { from, to: transfer.to, memo: transfer.memo },
          }) as Hex[],
          amountData(transfer.amount),
        );
      }
    }
    return {
      transactionHash: hash,
      transactionIndex: '0x0',
      blockHash: BLOCK_HASH,
      blockNumber: '0x10',
      from,
      to: transfers[0]?.token ?? null,
      cumulativeGasUsed: '0x30d40',
      gasUsed: '0x30d40',
      effectiveGasPrice: '0x1',
      contractAddress: null,
      logs,
      logsBloom: `0x${'00'.repeat(256)}`,
      status: reverted ? '0x0' : '0x1',
      type: '0x76',
    };
  };

  const handle = async (request: Request): Promise<Response> => {
    const body = (await request.json()) as
      | { id: number; method: string; params?: unknown[] }
      | { id: number; method: string; params?: unknown[] }[];
    const one = async (message: { id: number; method: string; params?: unknown[] }) => {
      calls.push(message.method);
      if (message.method === 'eth_sendRawTransaction' && holding) {
        const take = await new Promise<boolean>((resolve) => held.push(resolve));
        if (!take) return { jsonrpc: '2.0', id: message.id, error: { code: -32603, message: 'dropped by the test' } };
      }
      const failure = failures.get(message.method);
      if (failure && 'code' in failure) return { jsonrpc: '2.0', id: message.id, error: { code: failure.code, message: failure.message } };
      try {
        return { jsonrpc: '2.0', id: message.id, result: answer(message.method, message.params ?? []) };
      } catch (error) {
        const code = (error as { code?: number }).code ?? -32603;
        return { jsonrpc: '2.0', id: message.id, error: { code, message: (error as Error).message } };
      }
    };
    const messages = Array.isArray(body) ? body : [body];
    const httpFailure = messages.map((message) => failures.get(message.method)).find((failure) => failure && 'status' in failure);
    if (httpFailure && 'status' in httpFailure) {
      for (const message of messages) calls.push(message.method);
      return new Response('upstream unavailable', { status: httpFailure.status });
    }
    return Response.json(Array.isArray(body) ? await Promise.all(body.map(one)) : await one(body));
  };

  const listen = () => {
    server = Bun.serve({ hostname: '127.0.0.1', port, fetch: handle });
    port = server.port ?? 0;
  };
  listen();

  return {
    url: `http://127.0.0.1:${port}`,
    chainId,
    broadcasts,
    calls,
    fail: (method, failure) => {
      if (failure) failures.set(method, failure);
      else failures.delete(method);
    },
    revertBroadcasts: (value) => {
      revert = value;
    },
    withholdReceipts: (value) => {
      withhold = value;
    },
    holdBroadcasts: () => {
      holding = true;
    },
    releaseBroadcasts: ({ take }) => {
      holding = false;
      for (const resolve of held.splice(0)) resolve(take);
    },
    get heldBroadcasts() {
      return held.length;
    },
    down: async () => {
      await server?.stop(true);
      server = undefined;
    },
    up: () => {
      if (!server) listen();
    },
    close: async () => {
      await server?.stop(true);
      server = undefined;
    },
  };
}
