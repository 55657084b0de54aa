/**
 * The hub's wallet for tests (API-CONTRACT 10.3, step 2), on a random loopback port:
 * `POST /api/v1/wallet/pay {www_authenticate, endpoint_slug}` with a consumer's hub token signs a payment
 * for the challenge with that consumer's test key and answers `{x_payment: "Payment <credential>"}`. Like
 * the hub, it signs and never broadcasts. It signs one of two ways (`signAs`):
 * - `pympp-0.4.2`, the default, as the deployed SyftHub wallet does (pympp 0.4.2's `TempoMethod`, read from
 *   its source: `mpp/methods/tempo/client.py`, `_attribution.py`, `_parsing.py`): `eth_chainId`,
 *   `eth_getTransactionCount(payer, "pending")`, `eth_gasPrice` and `eth_estimateGas` at the RPC; a Tempo
 *   transaction with one call, `transferWithMemo(recipient, amount, memo)` on the currency, gas
 *   max(1,000,000, estimate + 5,000), max fee = priority fee = the gas price, nonce key 0, fee token = the
 *   currency; the memo's last 7 bytes RANDOM (not bound to the challenge); the credential compact JSON with
 *   sorted keys, base64url without padding.
 * - `mppx`: through mppx 0.11's client (which asks the RPC for the chain, fees and gas; its memo's nonce is
 *   keccak256(challenge id)[0..6]).
 * Tests can make it pay another amount than the challenge asks (the credential still echoes the challenge),
 * write another memo, or sign with nothing behind it.
 */
import type { Server } from 'bun';
import { Challenge, Credential } from 'mppx';
import { Mppx, tempo } from 'mppx/client';
import { createClient, encodeFunctionData, type Hex, http, keccak256, stringToHex, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { Abis, Transaction } from 'viem/tempo';
import { tempo as tempoMainnet, tempoModerato } from 'viem/tempo/chains';

/** How the wallet signs: as the deployed hub (pympp 0.4.2) or as mppx 0.11's client. */
export type SigningMode = 'pympp-0.4.2' | 'mppx';

/** The memo a pympp payment carries: an MPP memo for the realm (default), another one, or none (`transfer`). */
export type MemoChoice = 'mpp' | 'wrong-tag' | 'wrong-version' | 'wrong-server' | 'none';

export interface HubWalletPayment {
  token: string;
  endpointSlug: string;
  wwwAuthenticate: string;
  payer: string;
}

export interface FakeHubWallet {
  readonly url: string;
  /** Every payment signed, in order. */
  readonly payments: HubWalletPayment[];
  /** A consumer with a key of its own: its hub token. */
  addConsumer(name: string): { token: string; address: `0x${string}` };
  /** Signs directly, without HTTP (same as the route). `amount` (base units) replaces the challenge's in what is signed. */
  pay(token: string, wwwAuthenticate: string, options?: { amount?: string; mode?: SigningMode; memo?: MemoChoice }): Promise<string>;
  /** The next payments are signed for this amount (base units) instead of the challenge's. */
  payAmount(amount: string | undefined): void;
  /** How the next payments are signed (default `pympp-0.4.2`, the deployed hub). */
  signAs(mode: SigningMode): void;
  /** The memo of the next pympp payments (default `mpp`: a proper MPP memo with a random nonce). */
  writeMemo(memo: MemoChoice): void;
  close(): Promise<void>;
}

export function startFakeHubWallet(rpcUrl: string): FakeHubWallet {
  const keys = new Map<string, `0x${string}`>();
  const payments: HubWalletPayment[] = [];
  let counter = 0;
  let amountOverride: string | undefined;
  let signing: SigningMode = 'pympp-0.4.2';
  let memoChoice: MemoChoice = 'mpp';

  const pay = async (
    token: string,
    wwwAuthenticate: string,
    options: { amount?: string; mode?: SigningMode; memo?: MemoChoice } = {},
  ): Promise<string> => {
    const key = keys.get(token);
    if (!key) throw new Error('unknown consumer');
    if ((options.mode ?? signing) === 'pympp-0.4.2') {
      return payAsPympp(rpcUrl, key, wwwAuthenticate, options.amount ?? amountOverride, options.memo ?? memoChoice);
    }
    const account = privateKeyToAccount(key);
    const challenge = Challenge.deserialize(wwwAuthenticate);
    const testnet = (challenge.request.methodDetails as { chainId?: number } | undefined)?.chainId === tempoModerato.id;
    const client = createClient({ chain: testnet ? tempoModerato : tempoMainnet, transport: http(rpcUrl, { retryCount: 0 }) });
    const mppx = Mppx.create({ methods: [tempo.charge({ account, getClient: () => client })], polyfill: false });
    const amount = options.amount ?? amountOverride;
    // To pay another amount, sign for an altered challenge, then echo the real one (its HMAC stays valid).
    const signed = amount === undefined ? challenge : { ...challenge, request: { ...challenge.request, amount } };
    const header = Challenge.serialize(signed);
    const credential = await mppx.createCredential(new Response(null, { status: 402, headers: { 'WWW-Authenticate': header } }));
    if (amount === undefined) return credential;
    return Credential.serialize({ ...Credential.deserialize(credential), challenge });
  };

  const server: Server<undefined> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (request) => {
      const url = new URL(request.url);
      if (request.method !== 'POST' || url.pathname !== '/api/v1/wallet/pay')
        return Response.json({ detail: 'Not Found' }, { status: 404 });
      const token = request.headers.get('authorization')?.replace(/^Bearer /, '') ?? '';
      if (!keys.has(token)) return Response.json({ detail: 'Could not validate credentials' }, { status: 401 });
      const body = (await request.json()) as { www_authenticate?: string; endpoint_slug?: string };
      if (!body.www_authenticate || !body.endpoint_slug)
        return Response.json({ detail: 'www_authenticate and endpoint_slug are required' }, { status: 422 });
      try {
        const x_payment = await pay(token, body.www_authenticate);
        payments.push({
          token,
          endpointSlug: body.endpoint_slug,
          wwwAuthenticate: body.www_authenticate,
          payer: privateKeyToAccount(keys.get(token) as `0x${string}`).address,
        });
        return Response.json({ x_payment });
      } catch (error) {
        return Response.json({ detail: `Payment failed: ${(error as Error).message}` }, { status: 400 });
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    payments,
    addConsumer: (name) => {
      counter++;
      const key = `0x${(counter + 0x1000).toString(16).padStart(64, '0')}` as `0x${string}`;
      const token = `hub-token-${name}-${counter}`;
      keys.set(token, key);
      return { token, address: privateKeyToAccount(key).address };
    },
    pay,
    payAmount: (amount) => {
      amountOverride = amount;
    },
    signAs: (mode) => {
      signing = mode;
    },
    writeMemo: (memo) => {
      memoChoice = memo;
    },
    close: async () => {
      await server.stop(true);
    },
  };
}

/** One JSON-RPC call, as pympp's `_rpc_call` makes it (its errors raise). */
async function rpcCall<T>(rpcUrl: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }),
  });
  if (!response.ok) throw new Error(`RPC HTTP ${response.status}`);
  const body = (await response.json()) as { result?: T; error?: unknown };
  if (body.error) throw new Error(`RPC error: ${JSON.stringify(body.error)}`);
  return body.result as T;
}

/** pympp's `_attribution.encode(server_id, client_id)`, with a random nonce; or a deliberately wrong memo. */
function pymppMemo(realm: string, choice: MemoChoice): Hex | undefined {
  if (choice === 'none') return undefined;
  const fingerprint = (value: string) => keccak256(stringToHex(value)).slice(2, 22);
  const tag = choice === 'wrong-tag' ? 'deadbeef' : keccak256(stringToHex('mpp')).slice(2, 10);
  const version = choice === 'wrong-version' ? '02' : '01';
  const server = fingerprint(choice === 'wrong-server' ? 'another-endpoint' : realm);
  const nonce = toHex(crypto.getRandomValues(new Uint8Array(7))).slice(2);
  return `0x${tag}${version}${server}${'00'.repeat(10)}${nonce}`;
}

/** JSON with its object keys sorted, compact (Python's `json.dumps(..., separators=(",", ":"), sort_keys=True)`). */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${sortedJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The `WWW-Authenticate` parameters as pympp's `parse_www_authenticate` reads them (the request kept as sent). */
function challengeParameters(header: string): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const match of header.replace(/^Payment\s+/i, '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
    parameters[match[1] as string] = (match[2] as string).replace(/\\(.)/g, '$1');
  }
  return parameters;
}

/**
 * A payment as pympp 0.4.2's `TempoMethod.create_credential` makes it (no fee payer: knode offers none), with
 * viem signing the same Tempo transaction pytempo would.
 */
async function payAsPympp(rpcUrl: string, key: Hex, wwwAuthenticate: string, amountOverride: string | undefined, memoChoice: MemoChoice) {
  const account = privateKeyToAccount(key);
  const parameters = challengeParameters(wwwAuthenticate);
  const request = JSON.parse(Buffer.from(parameters.request as string, 'base64url').toString('utf8')) as {
    amount: string;
    currency: Hex;
    recipient: Hex;
  };
  const amount = BigInt(amountOverride ?? request.amount);
  const memo = pymppMemo(parameters.realm as string, memoChoice);
  const data = memo
    ? encodeFunctionData({ abi: Abis.tip20, functionName: 'transferWithMemo', args: [request.recipient, amount, memo] })
    : encodeFunctionData({ abi: Abis.tip20, functionName: 'transfer', args: [request.recipient, amount] });
  const [chainIdHex, nonceHex, gasPriceHex] = await Promise.all([
    rpcCall<Hex>(rpcUrl, 'eth_chainId', []),
    rpcCall<Hex>(rpcUrl, 'eth_getTransactionCount', [account.address, 'pending']),
    rpcCall<Hex>(rpcUrl, 'eth_gasPrice', []),
  ]);
  let gas = 1_000_000n;
  try {
    const estimate = BigInt(
      await rpcCall<Hex>(rpcUrl, 'eth_estimateGas', [{ from: account.address, to: request.currency, data }, 'latest']),
    );
    if (estimate + 5_000n > gas) gas = estimate + 5_000n;
  } catch {}
  const chainId = Number(BigInt(chainIdHex));
  const gasPrice = BigInt(gasPriceHex);
  const signature = await account.signTransaction(
    {
      type: 'tempo',
      chainId,
      calls: [{ to: request.currency, value: 0n, data }],
      gas,
      maxFeePerGas: gasPrice,
      maxPriorityFeePerGas: gasPrice,
      nonce: Number(BigInt(nonceHex)),
      nonceKey: 0n,
      feeToken: request.currency,
    } as never,
    { serializer: Transaction.serialize as never },
  );
  const credential = {
    challenge: {
      id: parameters.id,
      realm: parameters.realm,
      method: parameters.method,
      intent: parameters.intent,
      request: parameters.request,
      expires: parameters.expires,
    },
    payload: { type: 'transaction', signature },
    source: `did:pkh:eip155:${chainId}:${account.address}`,
  };
  return `Payment ${Buffer.from(sortedJson(credential)).toString('base64url')}`;
}
