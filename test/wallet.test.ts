import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';

/** `/api/v1/settings/wallet`: the tenant's payment wallet (API-CONTRACT 10.3). */

const WALLET = '/api/v1/settings/wallet';
const ADDRESS = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';

describe('payment wallet', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;

  const post = (payload: unknown, user: TestUser | string = alice, headers: Record<string, string> = {}) =>
    t.request({ method: 'POST', url: WALLET, token: typeof user === 'string' ? user : user.token, headers, payload: payload as object });
  const get = (user: TestUser | string = alice, headers: Record<string, string> = {}) =>
    t.request({ method: 'GET', url: WALLET, token: typeof user === 'string' ? user : user.token, headers });
  const remove = (user: TestUser | string = alice, headers: Record<string, string> = {}) =>
    t.request({ method: 'DELETE', url: WALLET, token: typeof user === 'string' ? user : user.token, headers });
  const storedRow = async (user: TestUser) =>
    t.services.database.db
      .selectFrom('payment_wallets')
      .selectAll()
      .where('tenant_id', '=', (await t.tenant(user)).id)
      .executeTakeFirst();

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    alice = await t.user('walletalice');
    bob = await t.user('walletbob');
  });
  afterAll(() => t.close());

  test('GET before a wallet is set is 404', async () => {
    const response = await get();
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ detail: 'No payment wallet configured' });
  });

  test('POST sets the wallet: testnet by default, chain 42431, the public RPC unless one is given', async () => {
    const response = await post({ wallet_address: ADDRESS });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ wallet_address: ADDRESS, testnet: true, rpc_url: null, chain_id: 42431 });
    expect((await get()).json()).toEqual({ wallet_address: ADDRESS, testnet: true, rpc_url: null, chain_id: 42431 });
  });

  test('mainnet is chain 4217; an RPC URL is kept; POST again replaces the wallet', async () => {
    const other = '0x1111111111111111111111111111111111111111';
    const response = await post({ wallet_address: other, testnet: false, rpc_url: 'http://127.0.0.1:8545' });
    expect(response.json()).toEqual({ wallet_address: other, testnet: false, rpc_url: 'http://127.0.0.1:8545', chain_id: 4217 });
    expect((await get()).json().wallet_address).toBe(other);
  });

  test('the challenge secret is generated, stored sealed, never shown, and kept when the wallet is replaced', async () => {
    await post({ wallet_address: ADDRESS });
    const first = await storedRow(alice);
    expect(first?.challenge_secret).toStartWith('enc:v1:');
    const opened = await t.services.payments.wallet(await t.tenant(alice));
    expect(opened?.challenge_secret.length).toBeGreaterThanOrEqual(32);
    expect(JSON.stringify((await get()).json())).not.toContain(opened?.challenge_secret as string);
    await post({ wallet_address: ADDRESS, testnet: false });
    expect((await t.services.payments.wallet(await t.tenant(alice)))?.challenge_secret).toBe(opened?.challenge_secret as string);
  });

  test('credentials in the RPC URL are sealed at rest and masked in the view; sending the mask back keeps them', async () => {
    const response = await post({ wallet_address: ADDRESS, rpc_url: 'https://user:rpc-key-123@rpc.example.com/v1' });
    expect(response.json().rpc_url).toBe('https://********@rpc.example.com/v1');
    expect((await storedRow(alice))?.rpc_url).not.toContain('rpc-key-123');
    await post({ wallet_address: ADDRESS, rpc_url: 'https://********@rpc.example.com/v1' });
    expect((await t.services.payments.wallet(await t.tenant(alice)))?.rpc_url).toBe('https://user:rpc-key-123@rpc.example.com/v1');
  });

  test('no private key is asked for: a body that sends one is taken without it', async () => {
    const response = await post({ wallet_address: ADDRESS, private_key: `0x${'11'.repeat(32)}` });
    expect(response.statusCode).toBe(200);
    expect(JSON.stringify(await storedRow(alice))).not.toContain('11'.repeat(32));
  });

  const invalid: [string, unknown, string][] = [
    ['no address', {}, 'body.wallet_address'],
    ['an address without 0x', { wallet_address: ADDRESS.slice(2) }, 'body.wallet_address'],
    ['an address too short', { wallet_address: ADDRESS.slice(0, 40) }, 'body.wallet_address'],
    ['an address with a non-hex digit', { wallet_address: `${ADDRESS.slice(0, 41)}g` }, 'body.wallet_address'],
    ['testnet as a string', { wallet_address: ADDRESS, testnet: 'yes' }, 'body.testnet'],
    ['an RPC URL that is not http(s)', { wallet_address: ADDRESS, rpc_url: 'ftp://rpc.example.com' }, 'body.rpc_url'],
    ['an RPC URL that is not a URL', { wallet_address: ADDRESS, rpc_url: 'rpc.example.com' }, 'body.rpc_url'],
  ];
  for (const [name, payload, loc] of invalid) {
    test(`POST refuses ${name} (422 on ${loc}) and keeps the stored wallet`, async () => {
      await post({ wallet_address: ADDRESS });
      expect(issueLocs(await post(payload))).toEqual([loc]);
      expect((await get()).json().wallet_address).toBe(ADDRESS);
    });
  }

  test('POST refuses a masked RPC URL with nothing stored behind the mask', async () => {
    expect(issueLocs(await post({ wallet_address: ADDRESS, rpc_url: 'https://********@elsewhere.example.com' }, bob))).toEqual([
      'body.rpc_url',
    ]);
  });

  test('every wallet route is 401 without credentials or with bad ones', async () => {
    for (const request of [
      { method: 'GET' as const, url: WALLET },
      { method: 'POST' as const, url: WALLET, payload: { wallet_address: ADDRESS } },
      { method: 'DELETE' as const, url: WALLET },
    ]) {
      const anonymous = await t.request(request);
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json()).toEqual({ detail: 'Not authenticated' });
      expect((await t.request({ ...request, token: 'not-a-token' })).statusCode).toBe(401);
    }
  });

  test("each tenant has its own wallet; another tenant's is out of reach (403 naming it, 404 for its own)", async () => {
    await post({ wallet_address: ADDRESS });
    expect((await get(bob)).statusCode).toBe(404);
    for (const response of [
      await get(bob, { 'x-tenant-name': alice.tenant }),
      await post({ wallet_address: '0x2222222222222222222222222222222222222222' }, bob, { 'x-tenant-name': alice.tenant }),
      await remove(bob, { 'x-tenant-name': alice.tenant }),
    ]) {
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ detail: 'Insufficient permissions' });
    }
    expect((await get()).json().wallet_address).toBe(ADDRESS);
    expect((await remove(bob)).statusCode).toBe(404);
    expect((await get()).statusCode).toBe(200);
  });

  test('the admin key acts on the tenant X-Tenant-Name names', async () => {
    const response = await post({ wallet_address: '0x3333333333333333333333333333333333333333' }, ADMIN_KEY, {
      'x-tenant-name': bob.tenant,
    });
    expect(response.statusCode).toBe(200);
    expect((await get(bob)).json().wallet_address).toBe('0x3333333333333333333333333333333333333333');
    expect((await get(ADMIN_KEY)).statusCode).toBe(404); // the `default` tenant has none
  });

  test('DELETE removes the wallet and its secret; a second DELETE is 404', async () => {
    await post({ wallet_address: ADDRESS });
    const response = await remove();
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ message: 'Payment wallet removed' });
    expect((await get()).statusCode).toBe(404);
    expect(await storedRow(alice)).toBeUndefined();
    expect((await remove()).statusCode).toBe(404);
  });
});

test('the wallet persists across a restart', async () => {
  const dataDir = tempDir();
  const first = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY }, dataDir);
  const user = await first.user('walletrestart');
  await first.request({ method: 'POST', url: WALLET, token: user.token, payload: { wallet_address: ADDRESS, testnet: false } });
  const secret = (await first.services.payments.wallet(await first.tenant(user)))?.challenge_secret;
  await first.close({ keepData: true });
  const second = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY }, dataDir);
  try {
    const login = await second.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: user.email, password: user.password },
    });
    const response = await second.request({ method: 'GET', url: WALLET, token: login.json().access_token });
    expect(response.json()).toEqual({ wallet_address: ADDRESS, testnet: false, rpc_url: null, chain_id: 4217 });
    expect((await second.services.payments.wallet(await second.tenant(user)))?.challenge_secret).toBe(secret as string);
  } finally {
    await second.close();
  }
});
