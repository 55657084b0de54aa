/**
 * The hub's wallet for tests (API-CONTRACT 10.3, step 2), on a random loopback port:
 * `POST /api/v1/wallet/pay {www_authenticate, endpoint_slug}` with a consumer's hub token signs a payment
 * for the challenge with that consumer's test key through mppx's client (which asks the Tempo RPC double
 * for the chain, fees and gas) and answers `{x_payment: "Payment <credential>"}`. Like the hub, it signs
 * and never broadcasts. Tests can make it pay another amount than the challenge asks (the credential still
 * echoes the challenge), or sign with nothing behind it.
 */
import type { Server } from 'bun';
import { Challenge, Credential } from 'mppx';
import { Mppx, tempo } from 'mppx/client';
import { createClient, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { tempo as tempoMainnet, tempoModerato } from 'viem/tempo/chains';

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
  pay(token: string, wwwAuthenticate: string, options?: { amount?: string }): Promise<string>;
  /** The next payments are signed for this amount (base units) instead of the challenge's. */
  payAmount(amount: string | undefined): void;
  close(): Promise<void>;
}

export function startFakeHubWallet(rpcUrl: string): FakeHubWallet {
  const keys = new Map<string, `0x${string}`>();
  const payments: HubWalletPayment[] = [];
  let counter = 0;
  let amountOverride: string | undefined;

  const pay = async (token: string, wwwAuthenticate: string, options: { amount?: string } = {}): Promise<string> => {
    const key = keys.get(token);
    if (!key) throw new Error('unknown consumer');
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
    close: async () => {
      await server.stop(true);
    },
  };
}
