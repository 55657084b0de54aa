import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY, ISO_UTC } from './helpers/constants.ts';
import { createModel } from './helpers/fixtures.ts';

describe('tenant membership', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const members = (tenant: string) => `/api/v1/tenants/${tenant}/members`;
  const add = (by: TestUser | undefined, tenant: string, email: unknown) =>
    t.request({ method: 'POST', url: members(tenant), token: by?.token, payload: { email } as object });
  const listMembers = (by: TestUser | undefined, tenant: string) => t.request({ method: 'GET', url: members(tenant), token: by?.token });

  test('a member adds another registered user to the tenant (201)', async () => {
    const owner = await t.user();
    const guest = await t.user();
    const response = await add(owner, owner.tenant, guest.email);
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({
      user_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: guest.email,
      tenant_name: owner.tenant,
      role: 'member',
      created_at: expect.stringMatching(ISO_UTC),
    });
  });

  test('the e-mail of the new member is matched case-insensitively', async () => {
    const owner = await t.user();
    const guest = await t.user();
    const response = await add(owner, owner.tenant, guest.email.toUpperCase());
    expect(response.statusCode).toBe(201);
    expect(response.json().email).toBe(guest.email);
  });

  test('the new member can act in the tenant with X-Tenant-Name', async () => {
    const owner = await t.user();
    const guest = await t.user();
    const model = await createModel(t, owner, 'owner-model');
    await add(owner, owner.tenant, guest.email);
    const headers = { 'x-tenant-name': owner.tenant };

    const models = await t.request({ method: 'GET', url: '/api/v1/models/', token: guest.token, headers });
    expect(models.statusCode).toBe(200);
    expect(models.json().map((m: { id: string }) => m.id)).toEqual([model.id]);
    const endpoints = await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: guest.token, headers });
    expect(endpoints.statusCode).toBe(200);

    // What the member creates there belongs to that tenant, not to the member's own.
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: guest.token,
      headers,
      payload: { name: 'guest-made', dtype: 'openai', configuration: { model: 'm' } },
    });
    expect(created.statusCode).toBe(201);
    const ownerView = await t.request({ method: 'GET', url: '/api/v1/models/', token: owner.token });
    expect(ownerView.json().map((m: { name: string }) => m.name)).toEqual(['owner-model', 'guest-made']);
    const guestOwn = await t.request({ method: 'GET', url: '/api/v1/models/', token: guest.token });
    expect(guestOwn.json()).toEqual([]);
  });

  test('without X-Tenant-Name the new member still acts in its own tenant', async () => {
    const owner = await t.user();
    const guest = await t.user();
    await createModel(t, owner, 'owner-only');
    await add(owner, owner.tenant, guest.email);
    const own = await t.request({ method: 'GET', url: '/api/v1/models/', token: guest.token });
    expect(own.json()).toEqual([]);
  });

  test('a non-member using X-Tenant-Name gets 403 Insufficient permissions', async () => {
    const owner = await t.user();
    const stranger = await t.user();
    await createModel(t, owner, 'secret-model');
    for (const url of ['/api/v1/models/', '/api/v1/endpoints/', '/api/v1/datasets/']) {
      const response = await t.request({ method: 'GET', url, token: stranger.token, headers: { 'x-tenant-name': owner.tenant } });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ detail: 'Insufficient permissions' });
    }
  });

  test('X-Tenant-Name naming a tenant that does not exist is 403 for a user, not a hint that it is missing', async () => {
    const user = await t.user();
    const response = await t.request({
      method: 'GET',
      url: '/api/v1/models/',
      token: user.token,
      headers: { 'x-tenant-name': 'no-such-tenant' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toEqual({ detail: 'Insufficient permissions' });
  });

  test('a malformed X-Tenant-Name is 422 on header.x-tenant-name', async () => {
    const user = await t.user();
    const response = await t.request({ method: 'GET', url: '/api/v1/models/', token: user.token, headers: { 'x-tenant-name': '../etc' } });
    expect(issueLocs(response)).toEqual(['header.x-tenant-name']);
  });

  test('a non-member cannot add members (403)', async () => {
    const owner = await t.user();
    const stranger = await t.user();
    const friend = await t.user();
    const response = await add(stranger, owner.tenant, friend.email);
    expect(response.statusCode).toBe(403);
    expect(response.json()).toEqual({ detail: 'Insufficient permissions' });
    // Nor add themselves.
    expect((await add(stranger, owner.tenant, stranger.email)).statusCode).toBe(403);
    const list = (await listMembers(owner, owner.tenant)).json();
    expect(list.map((m: { email: string }) => m.email)).toEqual([owner.email]);
  });

  test('a non-member cannot list the members (403)', async () => {
    const owner = await t.user();
    const stranger = await t.user();
    const response = await listMembers(stranger, owner.tenant);
    expect(response.statusCode).toBe(403);
  });

  test('an added member can add further members', async () => {
    const owner = await t.user();
    const second = await t.user();
    const third = await t.user();
    await add(owner, owner.tenant, second.email);
    const response = await add(second, owner.tenant, third.email);
    expect(response.statusCode).toBe(201);
  });

  test('an e-mail that no user has is 404', async () => {
    const owner = await t.user();
    const response = await add(owner, owner.tenant, 'nobody-here@example.com');
    expect(response.statusCode).toBe(404);
    expect(typeof response.json().detail).toBe('string');
  });

  test('a user who is already a member is 409', async () => {
    const owner = await t.user();
    const guest = await t.user();
    expect((await add(owner, owner.tenant, guest.email)).statusCode).toBe(201);
    const again = await add(owner, owner.tenant, guest.email);
    expect(again.statusCode).toBe(409);
    expect(typeof again.json().detail).toBe('string');
    expect((await add(owner, owner.tenant, owner.email)).statusCode).toBe(409);
  });

  test('a malformed e-mail is 422 on body.email', async () => {
    const owner = await t.user();
    for (const email of ['not-an-email', '', 42, null]) {
      expect(issueLocs(await add(owner, owner.tenant, email))).toEqual(['body.email']);
    }
    const missing = await t.request({ method: 'POST', url: members(owner.tenant), token: owner.token, payload: {} });
    expect(issueLocs(missing)).toEqual(['body.email']);
  });

  test('a body that is not JSON is 422 on body', async () => {
    const owner = await t.user();
    const response = await t.request({
      method: 'POST',
      url: members(owner.tenant),
      token: owner.token,
      payload: 'email=x',
      headers: { 'content-type': 'application/json' },
    });
    expect(issueLocs(response)).toEqual(['body']);
  });

  test('GET members lists the owner and the added members', async () => {
    const owner = await t.user();
    const guest = await t.user();
    await add(owner, owner.tenant, guest.email);
    const response = await listMembers(owner, owner.tenant);
    expect(response.statusCode).toBe(200);
    const list = response.json();
    expect(list).toEqual([
      {
        user_id: expect.any(String),
        email: owner.email,
        tenant_name: owner.tenant,
        role: 'owner',
        created_at: expect.stringMatching(ISO_UTC),
      },
      {
        user_id: expect.any(String),
        email: guest.email,
        tenant_name: owner.tenant,
        role: 'member',
        created_at: expect.stringMatching(ISO_UTC),
      },
    ]);
    // A member sees the same list.
    expect((await listMembers(guest, owner.tenant)).json()).toEqual(list);
  });

  describe('removing a member', () => {
    const remove = (by: TestUser | string | undefined, tenant: string, email: string) =>
      t.request({
        method: 'DELETE',
        url: `${members(tenant)}/${encodeURIComponent(email)}`,
        token: typeof by === 'string' ? by : by?.token,
      });

    test('the owner removes a member, whose access ends there', async () => {
      const owner = await t.user();
      const guest = await t.user();
      await add(owner, owner.tenant, guest.email);
      const removed = await remove(owner, owner.tenant, guest.email.toUpperCase());
      expect(removed.statusCode).toBe(200);
      expect(removed.json().message).toContain('no longer a member');
      expect((await listMembers(owner, owner.tenant)).json().map((m: { email: string }) => m.email)).toEqual([owner.email]);
      expect((await listMembers(guest, owner.tenant)).statusCode).toBe(403);
      expect((await remove(owner, owner.tenant, guest.email)).statusCode).toBe(404);
    });

    test('a member cannot remove (403), the owner cannot be removed (409), an e-mail that is not one is a 422', async () => {
      const owner = await t.user();
      const guest = await t.user();
      const other = await t.user();
      await add(owner, owner.tenant, guest.email);
      await add(owner, owner.tenant, other.email);
      expect((await remove(guest, owner.tenant, other.email)).statusCode).toBe(403);
      expect((await remove(owner, owner.tenant, owner.email)).statusCode).toBe(409);
      expect(issueLocs(await remove(owner, owner.tenant, 'not-an-email'))).toEqual(['path.email']);
    });

    test("401 without or with a bad token; another tenant's members are out of reach (403)", async () => {
      const owner = await t.user();
      const stranger = await t.user();
      expect((await remove(undefined, owner.tenant, stranger.email)).statusCode).toBe(401);
      expect((await remove('not-a-token', owner.tenant, stranger.email)).statusCode).toBe(401);
      expect((await remove(stranger, owner.tenant, owner.email)).statusCode).toBe(403);
    });
  });

  test('every membership route is 401 without a token or with a bad one', async () => {
    const owner = await t.user();
    for (const token of [undefined, 'bad-token']) {
      const post = await t.request({ method: 'POST', url: members(owner.tenant), token, payload: { email: owner.email } });
      const get = await t.request({ method: 'GET', url: members(owner.tenant), token });
      for (const response of [post, get]) {
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: token ? 'Could not validate credentials' : 'Not authenticated' });
      }
    }
  });
});

describe('tenant membership with the admin key', () => {
  test('the admin key can add a member to any tenant, 404 for an unknown one', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    try {
      const owner = await t.user();
      const guest = await t.user();
      const added = await t.request({
        method: 'POST',
        url: `/api/v1/tenants/${owner.tenant}/members`,
        token: ADMIN_KEY,
        payload: { email: guest.email },
      });
      expect(added.statusCode).toBe(201);
      const unknown = await t.request({
        method: 'POST',
        url: '/api/v1/tenants/no-such-tenant/members',
        token: ADMIN_KEY,
        payload: { email: guest.email },
      });
      expect(unknown.statusCode).toBe(404);
    } finally {
      await t.close();
    }
  });
});
