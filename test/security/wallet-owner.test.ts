import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { ADMIN_KEY } from '../helpers/constants.ts';

/**
 * Issue 22, item 5: any member of a tenant could change its payment wallet, and so send the tenant's MPP
 * payments to their own address. Members may see it; only the owner (or the admin key) sets or removes it.
 */
describe("security: a member cannot redirect the tenant's payments", () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  const OWNER_WALLET = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';
  const MEMBER_WALLET = '0x000000000000000000000000000000000000dEaD';
  const asMember = () => ({ ...member.headers, 'x-tenant-name': owner.tenant });

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('wallet-owner');
    member = await t.user('wallet-member');
    const added = await t.request({
      method: 'POST',
      url: `/api/v1/tenants/${owner.tenant}/members`,
      token: owner.token,
      payload: { email: member.email },
    });
    expect(added.statusCode).toBe(201);
    const set = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: OWNER_WALLET },
    });
    expect(set.statusCode).toBe(200);
  });
  afterAll(async () => {
    await t.close();
  });

  test('a member sees the wallet but cannot replace or remove it (403); nothing changes', async () => {
    const seen = await t.request({ method: 'GET', url: '/api/v1/settings/wallet', headers: asMember() });
    expect(seen.statusCode).toBe(200);
    const replaced = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      headers: asMember(),
      payload: { wallet_address: MEMBER_WALLET },
    });
    expect(replaced.statusCode).toBe(403);
    expect(replaced.json().detail).toBe(`Only the owner of '${owner.tenant}' changes its payment wallet`);
    expect((await t.request({ method: 'DELETE', url: '/api/v1/settings/wallet', headers: asMember() })).statusCode).toBe(403);
    const kept = await t.request({ method: 'GET', url: '/api/v1/settings/wallet', token: owner.token });
    expect(kept.json().wallet_address).toBe(OWNER_WALLET);
  });

  test('the admin key, naming the tenant, may', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: ADMIN_KEY,
      headers: { 'x-tenant-name': owner.tenant },
      payload: { wallet_address: OWNER_WALLET, testnet: false },
    });
    expect(response.statusCode).toBe(200);
  });
});
