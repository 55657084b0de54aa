import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { Challenge, Credential } from 'mppx';
import { type Hex, keccak256, stringToHex } from 'viem';
import { Transaction } from 'viem/tempo';
import { type FakeHubWallet, type MemoChoice, startFakeHubWallet } from './fakes/hub-wallet.ts';
import { FAKE_ANSWER, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { type FakeTempoRpc, startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { Dataset } from './helpers/datasets.ts';
import { createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { connectMarketplace } from './helpers/hub.ts';
import { sseEvents } from './helpers/streams.ts';

/**
 * MPP payments end to end, offline (API-CONTRACT 10.3): a query to an endpoint with an `mpp` policy is
 * refused with a 402 and its challenge; the consumer's hub wallet (a double signing with a test key through
 * mppx's client) pays it; the retry with `X-Payment` is answered, and only then is the signed transaction
 * broadcast to the Tempo RPC double, whose ledger (`broadcasts`) is the money that moved.
 */

const RECIPIENT = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';
const PATH_USD = '0x20c0000000000000000000000000000000000000';
const FIRST_LINE = FAKE_ANSWER.split('\n')[0] as string;
const HEADER =
  /^Payment id="([A-Za-z0-9_-]+)", realm="([^"]+)", method="tempo", intent="charge", request="([A-Za-z0-9_-]+)", expires="([^"]+)", description="([^"]+)"$/;

function decodeRequest(header: string): string {
  const match = HEADER.exec(header);
  if (!match) throw new Error(`not a challenge: ${header}`);
  return Buffer.from(match[3] as string, 'base64url').toString('utf8');
}

describe('MPP payments', () => {
  let t: TestApp;
  let owner: TestUser;
  let other: TestUser;
  let model: FakeOpenAIServer;
  let rpc: FakeTempoRpc;
  let wallet: FakeHubWallet;
  let consumer: { token: string; address: `0x${string}` };
  let datasetId: string;
  let modelId: string;

  const query = (slug: string, payload: object = {}, options: { payment?: string; user?: TestUser | string } = {}) => {
    const user = options.user ?? owner;
    return t.request({
      method: 'POST',
      url: `/api/v1/endpoints/${slug}/query`,
      token: typeof user === 'string' ? user : user.token,
      headers: options.payment ? { 'x-payment': options.payment } : {},
      payload: { messages: 'Tell me about pets', ...payload },
    });
  };

  /** Step 2 of the contract: the consumer has the hub's wallet sign the challenge of a 402. */
  const pay = async (refused: LightMyRequestResponse, slug: string): Promise<string> => {
    expect(refused.statusCode).toBe(402);
    const response = await fetch(`${wallet.url}/api/v1/wallet/pay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${consumer.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ www_authenticate: refused.headers['www-authenticate'], endpoint_slug: slug }),
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as { x_payment: string }).x_payment;
  };

  /** 402, pay, retry with the credential: the retry's answer. */
  const paidQuery = async (slug: string, payload: object = {}) => {
    const payment = await pay(await query(slug, payload), slug);
    return { response: await query(slug, payload, { payment }), payment };
  };

  const usage = async (slug: string) =>
    (await t.request({ method: 'GET', url: `/api/v1/endpoints/${slug}/usage`, token: owner.token })).json() as Record<string, unknown>[];

  const summaryEndpoint = async (slug: string, price: Record<string, unknown> = { price: 0.01 }) => {
    const endpoint = await createEndpoint(t, owner, { name: slug, slug, model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, { name: `${slug} price`, endpoint_id: endpoint.id, policy_type: 'mpp', configuration: price });
    return endpoint;
  };

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('payowner');
    other = await t.user('payother');
    model = startFakeOpenAI();
    rpc = startFakeTempoRpc();
    wallet = startFakeHubWallet(rpc.url);
    consumer = wallet.addConsumer('carol');

    const folder = join(t.dataDir, 'kb');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cats.txt'), 'Cats are small domesticated carnivorous mammals that people keep as pets.');
    writeFileSync(join(folder, 'dogs.txt'), 'Dogs are loyal pets that people walk every day and train to fetch.');
    writeFileSync(join(folder, 'fish.txt'), 'Goldfish are pets that people keep in bowls and tanks of water.');
    const dataset = await Dataset.create(t, owner, folder);
    datasetId = dataset.id;
    await dataset.indexed();
    modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: model.url })).id;

    const set = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: RECIPIENT, testnet: true, rpc_url: rpc.url },
    });
    expect(set.statusCode).toBe(200);
  });

  afterAll(async () => {
    await t.close();
    await model.close();
    await wallet.close();
    await rpc.close();
  });

  afterEach(() => {
    model.behave({});
    wallet.payAmount(undefined);
    wallet.signAs('pympp-0.4.2');
    wallet.writeMemo('mpp');
    for (const method of ['eth_sendRawTransaction', 'eth_call']) rpc.fail(method, undefined);
    rpc.up();
  });

  describe('the 402', () => {
    test('a query without X-Payment answers 402 with the challenge, in the contract’s words and order', async () => {
      await summaryEndpoint('paid-402');
      const before = t.clock.now();
      const response = await query('paid-402');
      expect(response.statusCode).toBe(402);
      expect(response.json()).toEqual({
        detail: 'Payment of $0.01 required to query this endpoint',
        msg: 'Payment Required',
        err: 'Payment of $0.01 required to query this endpoint',
        policy_metadata: {
          outcome: 'payment_required',
          entries: [
            {
              policy_type: 'mpp',
              kind: 'payment',
              status: 'rejected',
              amount: 0.01,
              currency: 'USD',
              recipient: { username: null, email: null, wallet_address: RECIPIENT },
              transaction: null,
              reason_code: 'PAYMENT_REQUIRED',
              reason: 'Payment of $0.01 required to query this endpoint',
              details: expect.objectContaining({ unit_type: 'request', unit_price: 0.01, challenge_id: expect.any(String) }),
            },
          ],
        },
      });
      expect(response.headers['cache-control']).toBe('no-store');
      const header = response.headers['www-authenticate'] as string;
      const [, id, realm, request, expires, description] = HEADER.exec(header) ?? [];
      expect(realm).toBe('paid-402');
      expect(description).toBe('Query endpoint: paid-402');
      // Compact JSON with sorted keys; 0.01 USD is 10000 base units of pathUSD; testnet names its chain.
      expect(decodeRequest(header)).toBe(
        `{"amount":"10000","currency":"${PATH_USD}","methodDetails":{"chainId":42431},"recipient":"${RECIPIENT}"}`,
      );
      expect(expires).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      expect(Date.parse(expires as string) - before).toBeGreaterThanOrEqual(5 * 60_000 - 1000);
      expect(Date.parse(expires as string) - before).toBeLessThanOrEqual(5 * 60_000 + 5000);
      // id = base64url(HMAC-SHA256(the tenant's challenge secret, realm|method|intent|request|expires|digest|opaque)).
      const secret = (await t.services.payments.wallet(await t.tenant(owner)))?.challenge_secret as string;
      const input = ['paid-402', 'tempo', 'charge', request, expires, '', ''].join('|');
      expect(id).toBe(createHmac('sha256', secret).update(input).digest('base64url'));
      expect(response.json().policy_metadata.entries[0].details.challenge_id).toBe(id);
      // Only a challenge was handed out: nothing is recorded, nothing broadcast.
      expect(await usage('paid-402')).toEqual([]);
    });

    test('a tenant without a wallet: 403 policy_violation saying so, and no challenge', async () => {
      const endpoint = await createEndpoint(t, other, {
        name: 'nowallet',
        slug: 'nowallet',
        model_id: (await createModel(t, other, 'm', { base_url: model.url })).id,
        response_type: 'summary',
      });
      await createPolicy(t, other, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.5 } });
      const response = await query('nowallet', {}, { user: other });
      expect(response.statusCode).toBe(403);
      expect(response.headers['www-authenticate']).toBeUndefined();
      expect(response.json()).toMatchObject({
        detail: 'This endpoint requires payment but its owner has not configured a payment wallet',
        msg: 'Permission Denied',
        policy_metadata: { outcome: 'policy_violation', entries: [{ policy_type: 'mpp', kind: 'payment', status: 'rejected' }] },
      });
      const rows = (await t.request({ method: 'GET', url: '/api/v1/endpoints/nowallet/usage', token: other.token })).json();
      expect(rows[0]).toMatchObject({ status: 'refused', error: expect.stringContaining('payment wallet'), payment: null });
    });

    test('a caller no applied_to pattern matches: 403 policy_violation / NO_PRICING_TIER', async () => {
      await summaryEndpoint('partners-only', { price: 0.01, applied_to: ['.*@partner\\.example'] });
      const response = await query('partners-only');
      expect(response.statusCode).toBe(403);
      expect(response.json()).toMatchObject({
        detail: `No price of this endpoint applies to ${owner.email}`,
        policy_metadata: { outcome: 'policy_violation', entries: [{ status: 'rejected', reason_code: 'NO_PRICING_TIER' }] },
      });
    });

    test('tiers: the most specific mpp policy whose applied_to matches sets the price; price 0 is a free entry', async () => {
      const endpoint = await summaryEndpoint('tiers', { price: 0, applied_to: [owner.email] });
      await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 1 } });
      const free = await query('tiers');
      expect(free.statusCode).toBe(200);
      expect(free.json().policy_metadata).toEqual({
        outcome: 'success',
        entries: [expect.objectContaining({ policy_type: 'mpp', kind: 'payment', status: 'free', amount: 0, currency: 'USD' })],
      });
      // The admin key's sender (admin@localhost) falls to the second tier.
      const admin = await t.request({
        method: 'POST',
        url: '/api/v1/endpoints/tiers/query',
        token: ADMIN_KEY,
        headers: { 'x-tenant-name': owner.tenant },
        payload: { messages: 'hi' },
      });
      expect(admin.statusCode).toBe(402);
      expect(admin.json().detail).toBe('Payment of $1 required to query this endpoint');
    });

    test('payment runs last among pre-hooks: refused by access, no challenge; the 402 lists the rate limit that ran', async () => {
      const denied = await summaryEndpoint('paid-denied');
      await createPolicy(t, owner, {
        endpoint_id: denied.id,
        policy_type: 'access',
        configuration: { mode: 'deny', patterns: [owner.email] },
      });
      const refused = await query('paid-denied');
      expect(refused.statusCode).toBe(403);
      expect(refused.headers['www-authenticate']).toBeUndefined();
      expect(refused.json().policy_metadata.outcome).toBe('access_denied');

      const limited = await summaryEndpoint('paid-limited');
      await createPolicy(t, owner, { endpoint_id: limited.id, policy_type: 'rate_limit', configuration: { rate: '100/m' } });
      const challenged = await query('paid-limited');
      expect(challenged.statusCode).toBe(402);
      expect(
        challenged
          .json()
          .policy_metadata.entries.map((entry: { policy_type: string; status: string }) => [entry.policy_type, entry.status]),
      ).toEqual([
        ['rate_limit', 'applied'],
        ['mpp', 'rejected'],
      ]);
    });
  });

  describe('402 → pay → retry → 200', () => {
    test('the query runs, the transaction is broadcast once, and the answer says what was charged', async () => {
      await summaryEndpoint('paid-ok', { price: 0.25 });
      const broadcasts = rpc.broadcasts.length;
      const { response } = await paidQuery('paid-ok');
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.summary.message.content).toBe(FIRST_LINE);
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
      const sent = rpc.broadcasts.at(-1);
      expect(sent?.from.toLowerCase()).toBe(consumer.address.toLowerCase());
      expect(sent?.transfers).toEqual([
        { token: PATH_USD, to: RECIPIENT, amount: 250_000n, memo: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
      ]);
      expect(body.policy_metadata).toEqual({
        outcome: 'success',
        entries: [
          {
            policy_type: 'mpp',
            kind: 'payment',
            status: 'charged',
            amount: 0.25,
            currency: 'USD',
            recipient: { username: null, email: null, wallet_address: RECIPIENT },
            transaction: { rail: 'mpp', id: sent?.hash, reference: null },
            reason_code: null,
            reason: null,
            details: { policy: 'paid-ok price', unit_type: 'request', unit_price: 0.25 },
          },
        ],
      });
      expect(body.cost).toBeCloseTo(0.25 + body.summary.cost, 10);
      expect(body.currency).toBe('USD');
      // The hub signed; knode broadcast (eth_sendRawTransaction, then the receipt), not the hub.
      expect(rpc.calls.slice(rpc.calls.lastIndexOf('eth_sendRawTransaction'))).toEqual([
        'eth_sendRawTransaction',
        'eth_getTransactionReceipt',
      ]);
      expect(wallet.payments.at(-1)).toMatchObject({ endpointSlug: 'paid-ok', payer: consumer.address });

      const [row] = await usage('paid-ok');
      expect(row).toMatchObject({
        sender_email: owner.email,
        status: 'success',
        error: null,
        payment: { rail: 'mpp', amount: 0.25, currency: 'USD', transaction: sent?.hash },
      });
    });

    test('the transaction is broadcast after the answer is ready: a failed generation broadcasts nothing', async () => {
      await summaryEndpoint('paid-fails');
      const payment = await pay(await query('paid-fails'), 'paid-fails');
      const broadcasts = rpc.broadcasts.length;
      model.behave({ failure: { status: 500, message: 'the model fell over' } });
      const failed = await query('paid-fails', {}, { payment });
      expect(failed.statusCode).toBe(502);
      expect(rpc.broadcasts).toHaveLength(broadcasts);
      expect(rpc.calls).not.toContain('eth_sendRawTransactionSync');
      expect((await usage('paid-fails'))[0]).toMatchObject({ status: 'error', payment: null });
      // Nothing was charged, so the credential is still good for the same query.
      model.behave({});
      const retried = await query('paid-fails', {}, { payment });
      expect(retried.statusCode).toBe(200);
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
    });

    test('a replayed credential is refused with a fresh challenge; it was charged once', async () => {
      await summaryEndpoint('paid-replay');
      const { response, payment } = await paidQuery('paid-replay');
      expect(response.statusCode).toBe(200);
      const broadcasts = rpc.broadcasts.length;
      const replay = await query('paid-replay', {}, { payment });
      expect(replay.statusCode).toBe(402);
      // The refusal's reason is in `detail` too: a client shows nothing else (API-CONTRACT 10.3 point 10).
      expect(replay.json().detail).toBe(
        'Payment of $0.01 required to query this endpoint (the payment sent was refused: This payment has already been used)',
      );
      expect(replay.json().policy_metadata.entries[0]).toMatchObject({
        status: 'rejected',
        reason_code: 'PAYMENT_REQUIRED',
        reason: 'Payment refused: This payment has already been used',
      });
      expect(HEADER.test(replay.headers['www-authenticate'] as string)).toBe(true);
      expect(rpc.broadcasts).toHaveLength(broadcasts);
      expect((await usage('paid-replay'))[0]).toMatchObject({
        status: 'refused',
        error: 'Payment refused: This payment has already been used',
      });
    });

    test('the same credential sent twice at once answers one query and charges once', async () => {
      await summaryEndpoint('paid-race');
      const payment = await pay(await query('paid-race'), 'paid-race');
      const broadcasts = rpc.broadcasts.length;
      const answers = await Promise.all([query('paid-race', {}, { payment }), query('paid-race', {}, { payment })]);
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 402]);
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
    });

    test('a payment of the wrong amount is refused and nothing is broadcast', async () => {
      await summaryEndpoint('paid-wrong');
      const refused = await query('paid-wrong');
      wallet.payAmount('9000'); // 0.009 instead of 0.01, the real challenge echoed
      const payment = await pay(refused, 'paid-wrong');
      const broadcasts = rpc.broadcasts.length;
      const response = await query('paid-wrong', {}, { payment });
      expect(response.statusCode).toBe(402);
      expect(response.json().policy_metadata.entries[0].reason).toContain('no matching payment call');
      expect(rpc.broadcasts).toHaveLength(broadcasts);
    });

    test('a challenge for an older price is refused', async () => {
      const endpoint = await summaryEndpoint('paid-repriced');
      const payment = await pay(await query('paid-repriced'), 'paid-repriced');
      const policies = (await t.request({ method: 'GET', url: `/api/v1/policies?endpoint_id=${endpoint.id}`, token: owner.token })).json();
      await t.request({
        method: 'PATCH',
        url: `/api/v1/policies/${policies[0].id}`,
        token: owner.token,
        payload: { configuration: { price: 0.02 } },
      });
      const response = await query('paid-repriced', {}, { payment });
      expect(response.statusCode).toBe(402);
      expect(response.json().detail).toStartWith('Payment of $0.02 required to query this endpoint (the payment sent was refused: ');
      expect(response.json().policy_metadata.entries[0].reason).toContain('not for what this query costs now');
    });

    test('an expired challenge is refused', async () => {
      await summaryEndpoint('paid-expired');
      const payment = await pay(await query('paid-expired'), 'paid-expired');
      t.clock.advance(6 * 60_000);
      const broadcasts = rpc.broadcasts.length;
      const response = await query('paid-expired', {}, { payment });
      expect(response.statusCode).toBe(402);
      expect(response.json().policy_metadata.entries[0].reason).toMatch(/expired/i);
      expect(rpc.broadcasts).toHaveLength(broadcasts);
    });

    test("another endpoint's challenge is refused, and so is another tenant's for the same slug", async () => {
      await summaryEndpoint('paid-a');
      await summaryEndpoint('paid-b');
      const forA = await pay(await query('paid-a'), 'paid-a');
      const response = await query('paid-b', {}, { payment: forA });
      expect(response.statusCode).toBe(402);
      expect(response.json().policy_metadata.entries[0].reason).toContain("another endpoint ('paid-a')");

      await t.request({
        method: 'POST',
        url: '/api/v1/settings/wallet',
        token: other.token,
        payload: { wallet_address: RECIPIENT, rpc_url: rpc.url },
      });
      const theirs = await createEndpoint(t, other, {
        name: 'paid-a',
        slug: 'paid-a',
        model_id: (await createModel(t, other, 'm2', { base_url: model.url })).id,
        response_type: 'summary',
      });
      await createPolicy(t, other, { endpoint_id: theirs.id, policy_type: 'mpp', configuration: { price: 0.01 } });
      const foreign = await pay(await query('paid-a', {}, { user: other }), 'paid-a');
      const crossed = await query('paid-a', {}, { payment: foreign });
      expect(crossed.statusCode).toBe(402);
      expect(crossed.json().policy_metadata.entries[0].reason).toContain("was not issued by this endpoint's owner");
    });

    test('an X-Payment header that is not a credential is a 402 with a challenge', async () => {
      await summaryEndpoint('paid-garbage');
      for (const payment of ['Bearer nonsense', 'Payment !!!', `Payment ${Buffer.from('{"challenge":{}}').toString('base64url')}`]) {
        const response = await query('paid-garbage', {}, { payment });
        expect(response.statusCode).toBe(402);
        expect(HEADER.test(response.headers['www-authenticate'] as string)).toBe(true);
      }
      const huge = await query('paid-garbage', {}, { payment: `Payment ${'a'.repeat(20_000)}` });
      expect(issueLocs(huge)).toEqual(['header.x-payment']);
    });

    test('RPC down: a clear 502, nothing charged; the same credential works once the RPC is back', async () => {
      await summaryEndpoint('paid-rpc-down');
      const payment = await pay(await query('paid-rpc-down'), 'paid-rpc-down');
      const broadcasts = rpc.broadcasts.length;
      await rpc.down();
      const response = await query('paid-rpc-down', {}, { payment });
      expect(response.statusCode).toBe(502);
      expect(response.json()).toEqual({ detail: 'The Tempo RPC could not be reached: the payment was not charged' });
      rpc.up();
      expect(rpc.broadcasts).toHaveLength(broadcasts);
      expect((await query('paid-rpc-down', {}, { payment })).statusCode).toBe(200);
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
    });

    test('RPC failing at the broadcast, after the answer was made: 502, nothing charged', async () => {
      await summaryEndpoint('paid-rpc-broadcast');
      const payment = await pay(await query('paid-rpc-broadcast'), 'paid-rpc-broadcast');
      const broadcasts = rpc.broadcasts.length;
      const generations = model.requests.length;
      rpc.fail('eth_sendRawTransaction', { status: 503 });
      const response = await query('paid-rpc-broadcast', {}, { payment });
      expect(response.statusCode).toBe(502);
      expect(response.json().detail).toBe('The Tempo RPC could not be reached: the payment was not charged');
      expect(model.requests.length).toBe(generations + 1); // the answer was made, then not delivered
      expect(rpc.broadcasts).toHaveLength(broadcasts);
      rpc.fail('eth_sendRawTransaction', undefined);
      expect((await query('paid-rpc-broadcast', {}, { payment })).statusCode).toBe(200);
    });

    test('a transaction the node refuses is a 402 with a fresh challenge (INSUFFICIENT_BALANCE)', async () => {
      await summaryEndpoint('paid-broke');
      const payment = await pay(await query('paid-broke'), 'paid-broke');
      rpc.fail('eth_sendRawTransaction', { code: -32000, message: 'insufficient funds for transfer' });
      const response = await query('paid-broke', {}, { payment });
      expect(response.statusCode).toBe(402);
      expect(response.json().policy_metadata.entries[0]).toMatchObject({
        reason_code: 'INSUFFICIENT_BALANCE',
        reason: expect.stringContaining('The Tempo node refused the payment'),
      });
    });

    test('a transaction that reverts on chain is not a charge: 402', async () => {
      await summaryEndpoint('paid-reverted');
      const payment = await pay(await query('paid-reverted'), 'paid-reverted');
      rpc.revertBroadcasts(true);
      try {
        const response = await query('paid-reverted', {}, { payment });
        expect(response.statusCode).toBe(402);
        expect(response.json().policy_metadata.outcome).toBe('payment_required');
      } finally {
        rpc.revertBroadcasts(false);
      }
    });
  });

  describe('the wallets that sign (API-CONTRACT 10.3 point 7)', () => {
    const fingerprint = (value: string) => keccak256(stringToHex(value)).slice(2, 22);
    const boundNonce = (challengeId: string) => keccak256(stringToHex(challengeId)).slice(2, 16);
    const decodeCredential = (payment: string) => {
      const encoded = payment.slice('Payment '.length);
      expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/); // base64url without padding
      return {
        json: Buffer.from(encoded, 'base64url').toString('utf8'),
        credential: JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')),
      };
    };

    test('the deployed hub wallet (pympp 0.4.2: a random memo nonce) pays; broadcast once; its replay is refused', async () => {
      await summaryEndpoint('hub-pympp', { price: 0.05 });
      wallet.signAs('pympp-0.4.2');
      const payment = await pay(await query('hub-pympp'), 'hub-pympp');
      // The x_payment as pympp 0.4.2 writes it: compact JSON with sorted keys, the challenge echoed without description.
      const { json, credential } = decodeCredential(payment);
      expect(Object.keys(credential)).toEqual(['challenge', 'payload', 'source']);
      expect(Object.keys(credential.challenge)).toEqual(['expires', 'id', 'intent', 'method', 'realm', 'request']);
      expect(Object.keys(credential.payload)).toEqual(['signature', 'type']);
      expect(json).not.toContain(': ');
      expect(credential.source).toBe(`did:pkh:eip155:42431:${consumer.address}`);

      const broadcasts = rpc.broadcasts.length;
      const response = await query('hub-pympp', {}, { payment });
      expect(response.statusCode).toBe(200);
      expect(response.json().policy_metadata.entries[0]).toMatchObject({ status: 'charged', amount: 0.05 });
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
      const sent = rpc.broadcasts.at(-1);
      const memo = sent?.transfers[0]?.memo as Hex;
      expect(sent?.transfers).toEqual([{ token: PATH_USD, to: RECIPIENT, amount: 50_000n, memo }]);
      // The MPP tag, version 1, this endpoint's fingerprint, no client id, and a nonce mppx would refuse.
      expect(memo.slice(0, 10)).toBe(keccak256(stringToHex('mpp')).slice(0, 10));
      expect(memo.slice(10, 12)).toBe('01');
      expect(memo.slice(12, 32)).toBe(fingerprint('hub-pympp'));
      expect(memo.slice(32, 52)).toBe('00'.repeat(10));
      expect(memo.slice(52)).not.toBe(boundNonce(credential.challenge.id));
      // The transaction as pympp builds it: gas ≥ 1,000,000, max fee = priority fee, nonce key 0, fees in pathUSD.
      const transaction = Transaction.deserialize(sent?.raw as `0x76${string}`);
      expect(transaction.gas).toBeGreaterThanOrEqual(1_000_000n);
      expect(transaction.maxFeePerGas).toBe(transaction.maxPriorityFeePerGas as bigint);
      expect(transaction.nonceKey ?? 0n).toBe(0n);
      expect(transaction.feeToken?.toString().toLowerCase()).toBe(PATH_USD);
      expect((await usage('hub-pympp'))[0]).toMatchObject({
        status: 'success',
        payment: { rail: 'mpp', amount: 0.05, transaction: sent?.hash },
      });

      const replay = await query('hub-pympp', {}, { payment });
      expect(replay.statusCode).toBe(402);
      expect(replay.json().detail).toBe(
        'Payment of $0.05 required to query this endpoint (the payment sent was refused: This payment has already been used)',
      );
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
    });

    test('a credential signed by mppx 0.11 (its memo nonce bound to the challenge) is accepted as well', async () => {
      await summaryEndpoint('hub-mppx', { price: 0.05 });
      wallet.signAs('mppx');
      const payment = await pay(await query('hub-mppx'), 'hub-mppx');
      const { credential } = decodeCredential(payment);
      const response = await query('hub-mppx', {}, { payment });
      expect(response.statusCode).toBe(200);
      expect(response.json().policy_metadata.entries[0]).toMatchObject({ status: 'charged', amount: 0.05 });
      const memo = rpc.broadcasts.at(-1)?.transfers[0]?.memo as Hex;
      expect(memo.slice(12, 32)).toBe(fingerprint('hub-mppx'));
      expect(memo.slice(52)).toBe(boundNonce(credential.challenge.id));
      const replay = await query('hub-mppx', {}, { payment });
      expect(replay.statusCode).toBe(402);
      expect(replay.json().policy_metadata.entries[0].reason).toBe('Payment refused: This payment has already been used');
    });

    test('a transaction already paid with cannot pay another challenge, even once its single-use keys expired', async () => {
      // A pympp memo does not name its challenge: anyone who saw the transaction on chain could attach it to a
      // fresh challenge of the same price. The journal keeps every transaction sent, for good.
      await summaryEndpoint('hub-stolen');
      const { response, payment } = await paidQuery('hub-stolen');
      expect(response.statusCode).toBe(200);
      const broadcasts = rpc.broadcasts.length;
      t.clock.advance(6 * 60_000); // the first challenge and its keys have expired
      const fresh = Challenge.deserialize((await query('hub-stolen')).headers['www-authenticate'] as string);
      const stolen = Credential.serialize({ ...Credential.deserialize(payment), challenge: fresh });
      const refused = await query('hub-stolen', {}, { payment: stolen });
      expect(refused.statusCode).toBe(402);
      expect(refused.json().policy_metadata.entries[0].reason).toBe('Payment refused: This payment has already been used');
      expect(rpc.broadcasts).toHaveLength(broadcasts);
    });

    const wrongMemos: [MemoChoice, string][] = [
      ['wrong-tag', 'the transfer memo is not an MPP memo (wrong tag)'],
      ['wrong-version', 'the transfer memo has an unknown MPP memo version'],
      ['wrong-server', 'the transfer memo names another server (wrong fingerprint)'],
      ['none', 'the transfer carries no MPP memo'],
    ];
    for (const [memo, reason] of wrongMemos) {
      test(`a transfer whose memo is ${memo === 'none' ? 'missing (plain transfer)' : memo} is refused, nothing broadcast`, async () => {
        const slug = `hub-memo-${memo}`;
        await summaryEndpoint(slug);
        wallet.writeMemo(memo);
        const payment = await pay(await query(slug), slug);
        const broadcasts = rpc.broadcasts.length;
        const generations = model.requests.length;
        const response = await query(slug, {}, { payment });
        expect(response.statusCode).toBe(402);
        expect(response.json().detail).toBe(
          `Payment of $0.01 required to query this endpoint (the payment sent was refused: The payment is not attributed to this endpoint: ${reason})`,
        );
        expect(HEADER.test(response.headers['www-authenticate'] as string)).toBe(true);
        expect(rpc.broadcasts).toHaveLength(broadcasts);
        expect(model.requests.length).toBe(generations); // refused before the query ran
      });
    }
  });

  describe('a price per document', () => {
    const rawPaid = async (slug: string) => {
      const endpoint = await createEndpoint(t, owner, { name: slug, slug, dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, {
        endpoint_id: endpoint.id,
        policy_type: 'mpp',
        configuration: { price: 0.002, unit_type: 'document' },
      });
    };
    const search = { messages: 'pets', similarity_threshold: 0, limit: 2 };

    test('the challenge comes before the search, for the documents asked for × price; the retry is answered', async () => {
      await rawPaid('per-doc');
      const refused = await query('per-doc', search);
      expect(refused.statusCode).toBe(402);
      expect(refused.json().detail).toBe('Payment of $0.004 required to query this endpoint');
      expect(refused.json().references).toBeUndefined();
      expect(JSON.parse(decodeRequest(refused.headers['www-authenticate'] as string)).amount).toBe('4000');
      const payment = await pay(refused, 'per-doc');
      const response = await query('per-doc', search, { payment });
      expect(response.statusCode).toBe(200);
      expect(response.json().references.documents).toHaveLength(2);
      expect(response.json().policy_metadata.entries[0]).toMatchObject({
        status: 'charged',
        amount: 0.004,
        details: { unit_type: 'document', unit_price: 0.002, documents: 2 },
      });
      expect(rpc.broadcasts.at(-1)?.transfers[0]?.amount).toBe(4000n);
    });

    test('without a limit the query asks for five documents, and pays for five', async () => {
      await rawPaid('per-doc-default');
      const refused = await query('per-doc-default', { messages: 'pets' });
      expect(refused.json().detail).toBe('Payment of $0.01 required to query this endpoint');
    });

    test('a retry that asks for another number of documents gets a new 402 for the new amount', async () => {
      await rawPaid('per-doc-changed');
      const payment = await pay(await query('per-doc-changed', search), 'per-doc-changed');
      const response = await query('per-doc-changed', { ...search, limit: 3 }, { payment });
      expect(response.statusCode).toBe(402);
      expect(response.json().detail).toStartWith('Payment of $0.006 required to query this endpoint (the payment sent was refused: ');
    });

    test('a search that finds nothing is paid for like one that finds everything: what matches is known only after payment', async () => {
      await rawPaid('per-doc-none');
      const nothing = { messages: 'pets', similarity_threshold: 1, limit: 2 };
      const refused = await query('per-doc-none', nothing);
      expect(refused.json().detail).toBe('Payment of $0.004 required to query this endpoint');
      const response = await query('per-doc-none', nothing, { payment: await pay(refused, 'per-doc-none') });
      expect(response.statusCode).toBe(200);
      expect(response.json().references.documents).toEqual([]);
      expect(response.json().policy_metadata.entries[0]).toMatchObject({ status: 'charged', amount: 0.004 });
    });

    test('an endpoint that generates charges the documents asked for too', async () => {
      const endpoint = await createEndpoint(t, owner, {
        name: 'per-doc-gen',
        slug: 'per-doc-gen',
        dataset_id: datasetId,
        model_id: modelId,
        response_type: 'both',
      });
      await createPolicy(t, owner, {
        endpoint_id: endpoint.id,
        policy_type: 'mpp',
        configuration: { price: 0.002, unit_type: 'document' },
      });
      const nothing = { messages: 'pets', similarity_threshold: 1, limit: 1 };
      const refused = await query('per-doc-gen', nothing);
      expect(refused.statusCode).toBe(402);
      expect(refused.json().detail).toBe('Payment of $0.002 required to query this endpoint');
      const response = await query('per-doc-gen', nothing, { payment: await pay(refused, 'per-doc-gen') });
      expect(response.statusCode).toBe(200);
      expect(response.json().references.documents).toEqual([]);
      expect(response.json().summary.message.content).toBe(FIRST_LINE);
      expect(response.json().policy_metadata.entries[0]).toMatchObject({
        status: 'charged',
        amount: 0.002,
        details: { unit_type: 'document', unit_price: 0.002, documents: 1 },
      });
    });
  });

  describe('streaming', () => {
    test('a paid stream is answered whole once the payment is collected, as the usual SSE', async () => {
      await summaryEndpoint('paid-stream');
      const unpaid = await query('paid-stream', { stream: true });
      expect(unpaid.statusCode).toBe(402);
      expect(unpaid.headers['content-type']).toContain('application/json');
      const payment = await pay(unpaid, 'paid-stream');
      const response = await query('paid-stream', { stream: true }, { payment });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toContain('text/event-stream');
      const events = sseEvents(response.body);
      expect(events.at(-1)?.data).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((event) => JSON.parse(event.data));
      expect(chunks.map((chunk) => chunk.choices[0].delta.content ?? '').join('')).toBe(FIRST_LINE);
      const last = chunks.at(-1);
      expect(last.policy_metadata.entries[0]).toMatchObject({
        status: 'charged',
        transaction: { rail: 'mpp', id: rpc.broadcasts.at(-1)?.hash },
      });
    });

    test('a paid stream whose generation fails is a plain 502 and broadcasts nothing', async () => {
      await summaryEndpoint('paid-stream-fails');
      const payment = await pay(await query('paid-stream-fails', { stream: true }), 'paid-stream-fails');
      const broadcasts = rpc.broadcasts.length;
      model.behave({ failure: { status: 500, message: 'no' } });
      const response = await query('paid-stream-fails', { stream: true }, { payment });
      expect(response.statusCode).toBe(502);
      expect(response.headers['content-type']).toContain('application/json');
      expect(rpc.broadcasts).toHaveLength(broadcasts);
    });
  });

  describe('mpp policies', () => {
    let endpointId: string;
    beforeAll(async () => {
      endpointId = (await createEndpoint(t, owner, { name: 'config', slug: 'mpp-config', model_id: modelId, response_type: 'summary' })).id;
    });
    const create = (configuration: unknown) =>
      t.request({
        method: 'POST',
        url: '/api/v1/policies/',
        token: owner.token,
        payload: { name: 'p', policy_type: 'mpp', endpoint_id: endpointId, configuration },
      });

    test('defaults: per request, anyone, USD', async () => {
      const response = await create({ price: 0.5 });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration).toEqual({ price: 0.5, unit_type: 'request', applied_to: ['*'], currency: 'USD' });
      await t.request({ method: 'DELETE', url: `/api/v1/policies/${response.json().id}`, token: owner.token });
    });

    const invalid: [string, unknown, string][] = [
      ['no price', {}, 'body.configuration.price'],
      ['a negative price', { price: -1 }, 'body.configuration.price'],
      ['a price with 7 decimals', { price: 0.0000001 }, 'body.configuration.price'],
      ['a price as a string', { price: '0.01' }, 'body.configuration.price'],
      ['an unknown unit', { price: 1, unit_type: 'token' }, 'body.configuration.unit_type'],
      ['another currency', { price: 1, currency: 'EUR' }, 'body.configuration.currency'],
      ['no applied_to patterns', { price: 1, applied_to: [] }, 'body.configuration.applied_to'],
      ['a pattern that does not compile', { price: 1, applied_to: ['(oops'] }, 'body.configuration.applied_to.0'],
    ];
    for (const [name, configuration, loc] of invalid) {
      test(`refuses ${name} (422 on ${loc})`, async () => {
        expect(issueLocs(await create(configuration))).toEqual([loc]);
      });
    }

    test('6 decimals are fine', async () => {
      const response = await create({ price: 1.234567 });
      expect(response.statusCode).toBe(201);
      await t.request({ method: 'DELETE', url: `/api/v1/policies/${response.json().id}`, token: owner.token });
    });
  });
});

describe('MPP on SyftHub', () => {
  let t: TestApp;
  let owner: TestUser;
  let hub: FakeSyftHub;
  let model: FakeOpenAIServer;
  let rpc: FakeTempoRpc;
  let wallet: FakeHubWallet;

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('hubpayowner');
    hub = await startFakeSyftHub();
    model = startFakeOpenAI();
    // A mainnet wallet: its challenges name no chain, and the node is chain 4217.
    rpc = startFakeTempoRpc({ chainId: 4217 });
    wallet = startFakeHubWallet(rpc.url);
    await connectMarketplace(t, owner, hub, 'hubpayowner');
    await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: RECIPIENT, testnet: false, rpc_url: rpc.url },
    });
  });

  afterAll(async () => {
    await t.close();
    await hub.close();
    await model.close();
    await wallet.close();
    await rpc.close();
  });

  test('the policy is published as {"type": "mpp", "version": "1.0", ...} and a consumer pays with its satellite token', async () => {
    const modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: model.url })).id;
    const endpoint = await createEndpoint(t, owner, { name: 'Paid chat', slug: 'paid-chat', model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, { name: 'Ten cents', endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.1 } });
    const published = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/paid-chat/publish',
      token: owner.token,
      payload: { publish_to_all_marketplaces: true },
    });
    expect(published.statusCode).toBe(200);
    expect(hub.endpointsOf('hubpayowner').get('paid-chat')?.policies).toEqual([
      {
        type: 'mpp',
        version: '1.0',
        enabled: true,
        description: 'Ten cents',
        config: { price: 0.1, unit_type: 'request', applied_to: ['*'], currency: 'USD' },
      },
    ]);

    const token = await hub.mintToken('carol@consumers.example', 'hubpayowner');
    const ask = (payment?: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/endpoints/paid-chat/query',
        token,
        headers: payment ? { 'x-payment': payment } : {},
        payload: { messages: 'hello' },
      });
    const refused = await ask();
    expect(refused.statusCode).toBe(402);
    const header = refused.headers['www-authenticate'] as string;
    // Mainnet: no methodDetails.
    expect(decodeRequest(header)).toBe(`{"amount":"100000","currency":"${PATH_USD}","recipient":"${RECIPIENT}"}`);
    const consumer = wallet.addConsumer('carol');
    const paid = await fetch(`${wallet.url}/api/v1/wallet/pay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${consumer.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ www_authenticate: header, endpoint_slug: 'paid-chat' }),
    });
    const { x_payment } = (await paid.json()) as { x_payment: string };
    expect(x_payment).toStartWith('Payment ');
    const response = await ask(x_payment);
    expect(response.statusCode).toBe(200);
    expect(response.json().policy_metadata.entries[0]).toMatchObject({ status: 'charged', amount: 0.1 });
    expect(rpc.broadcasts).toHaveLength(1);
    expect(rpc.broadcasts[0]?.transfers[0]).toMatchObject({ to: RECIPIENT, amount: 100_000n });
    const usage = (await t.request({ method: 'GET', url: '/api/v1/endpoints/paid-chat/usage', token: owner.token })).json();
    expect(usage[0]).toMatchObject({ sender_email: 'carol@consumers.example', status: 'success', payment: { rail: 'mpp', amount: 0.1 } });
  });
});

test('consumed credentials are remembered across a restart', async () => {
  const dataDir = tempDir();
  const model = startFakeOpenAI();
  const rpc = startFakeTempoRpc();
  const wallet = startFakeHubWallet(rpc.url);
  const consumer = wallet.addConsumer('dave');
  const env = { SVC_ADMIN_API_KEY: ADMIN_KEY };
  const first = await createTestApp(env, dataDir);
  try {
    const owner = await first.user('restartpay');
    await first.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: RECIPIENT, rpc_url: rpc.url },
    });
    const modelId = (await createModel(first, owner, 'fake', { base_url: model.url })).id;
    const endpoint = await createEndpoint(first, owner, { name: 'r', slug: 'restart-paid', model_id: modelId, response_type: 'summary' });
    await createPolicy(first, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.01 } });
    const ask = (app: TestApp, token: string, payment?: string) =>
      app.request({
        method: 'POST',
        url: '/api/v1/endpoints/restart-paid/query',
        token,
        headers: payment ? { 'x-payment': payment } : {},
        payload: { messages: 'hi' },
      });
    const used = await wallet.pay(consumer.token, (await ask(first, owner.token)).headers['www-authenticate'] as string);
    expect((await ask(first, owner.token, used)).statusCode).toBe(200);
    // A challenge issued before the restart, paid after it: a second later, since a challenge is its terms and
    // its expiry, and a clock standing still would issue the one just paid again.
    first.clock.advance(1_000);
    const pending = (await ask(first, owner.token)).headers['www-authenticate'] as string;
    await first.close({ keepData: true });

    const second = await createTestApp(env, dataDir);
    try {
      const login = await second.request({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: owner.email, password: owner.password },
      });
      const token = login.json().access_token as string;
      const replay = await ask(second, token, used);
      expect(replay.statusCode).toBe(402);
      expect(replay.json().policy_metadata.entries[0].reason).toBe('Payment refused: This payment has already been used');
      expect((await ask(second, token, await wallet.pay(consumer.token, pending))).statusCode).toBe(200);
      expect(rpc.broadcasts).toHaveLength(2);
    } finally {
      await second.close();
    }
  } finally {
    await model.close();
    await wallet.close();
    await rpc.close();
  }
});

describe('a receipt later than the deadline (API-CONTRACT 10.3 point 6)', () => {
  let t: TestApp;
  let owner: TestUser;
  let model: FakeOpenAIServer;
  let rpc: FakeTempoRpc;
  let wallet: FakeHubWallet;

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY }, tempDir(), { paymentReceiptTimeoutMs: 300 });
    owner = await t.user('latepay');
    model = startFakeOpenAI();
    rpc = startFakeTempoRpc();
    wallet = startFakeHubWallet(rpc.url);
    await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: RECIPIENT, rpc_url: rpc.url },
    });
  });
  afterAll(async () => {
    await t.close();
    await model.close();
    await wallet.close();
    await rpc.close();
  });

  test('the answer is delivered `pending` (never a 5xx); the reconciler confirms it; its usage row is there once', async () => {
    const modelId = (await createModel(t, owner, 'fake', { base_url: model.url })).id;
    const endpoint = await createEndpoint(t, owner, { name: 'late', slug: 'late-receipt', model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.25 } });
    const ask = (payment?: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/endpoints/late-receipt/query',
        token: owner.token,
        headers: payment ? { 'x-payment': payment } : {},
        payload: { messages: 'hi' },
      });
    const consumer = wallet.addConsumer('lena');
    const payment = await wallet.pay(consumer.token, (await ask()).headers['www-authenticate'] as string);
    rpc.withholdReceipts(true);
    const response = await ask(payment);
    expect(response.statusCode).toBe(200);
    const hash = rpc.broadcasts[0]?.hash;
    expect(response.json().summary.message.content).toBe(FIRST_LINE);
    expect(response.json().policy_metadata.entries[0]).toMatchObject({
      status: 'pending',
      amount: 0.25,
      transaction: { rail: 'mpp', id: hash },
      reason: 'The payment was sent; its receipt had not come when the answer was ready',
    });
    expect(response.json().cost).toBeCloseTo(0.25 + response.json().summary.cost, 10);
    const state = async () =>
      (
        await t.services.database.db
          .withTables<{ payment_settlements: { state: string } }>()
          .selectFrom('payment_settlements')
          .select('state')
          .execute()
      ).map((row) => row.state);
    expect(await state()).toEqual(['sent']);

    await t.services.settlements.reconcile();
    expect(await state()).toEqual(['sent']);
    rpc.withholdReceipts(false);
    await t.services.settlements.reconcile();
    expect(await state()).toEqual(['confirmed']);

    const usage = (await t.request({ method: 'GET', url: '/api/v1/endpoints/late-receipt/usage', token: owner.token })).json();
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ status: 'success', payment: { rail: 'mpp', amount: 0.25, transaction: hash } });
    // The answer was delivered: the same payment again is a replay, and nothing is sent again.
    const replay = await ask(payment);
    expect(replay.statusCode).toBe(402);
    expect(replay.json().detail).toContain('This payment has already been used');
    expect(rpc.broadcasts).toHaveLength(1);
  });
});
