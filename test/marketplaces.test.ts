import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { LightMyRequestResponse } from 'fastify';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, validationIssues } from './helpers/app.ts';
import { ISO_UTC, UNKNOWN_ID } from './helpers/constants.ts';

const VIEW_KEYS = [
  'accounting_email',
  'accounting_url',
  'created_at',
  'email',
  'id',
  'is_active',
  'is_default',
  'name',
  'updated_at',
  'url',
  'username',
].sort();

interface Marketplace {
  id: string;
  name: string;
  is_default: boolean;
  created_at: string;
}

describe('marketplaces', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  // Creating a marketplace logs in to it: two SyftHub doubles stand in for real hubs.
  let hub: FakeSyftHub;
  let other: FakeSyftHub;

  beforeAll(async () => {
    hub = await startFakeSyftHub({ loginsPerMinute: 1000 });
    other = await startFakeSyftHub({ loginsPerMinute: 1000 });
    for (const h of [hub, other]) h.addUser({ username: 'alice-hub', email: 'alice@hub.example.com', password: 'hub-password-secret' });
    hub.addUser({ username: 'u', email: 'u@hub.example.com', password: 'p' });
    hub.addUser({ username: 'enc-user', email: 'enc@hub.example.com', password: 'plain-hub-pass-1' });
    hub.addUser({ username: 'rotator', email: 'rotator@hub.example.com', password: 'rotator-pass-1' });
    t = await createTestApp();
    alice = await t.user();
    bob = await t.user();
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
    await other.close();
  });

  // One hub account belongs to one record (API-CONTRACT 6): each record gets an account of its own, at both hubs.
  let accounts = 0;
  const freshAccount = () => {
    const username = `acct-${++accounts}`;
    for (const h of [hub, other]) h.addUser({ username, email: `${username}@hub.example.com`, password: 'hub-password-secret' });
    return username;
  };
  const body = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    url: hub.url,
    username: freshAccount(),
    email: 'alice@hub.example.com',
    password: 'hub-password-secret',
    ...extra,
  });
  const post = (user: TestUser | undefined, payload: unknown) =>
    t.request({ method: 'POST', url: '/api/v1/marketplaces/', token: user?.token, payload: payload as object });
  const create = async (user: TestUser, name: string, extra: Record<string, unknown> = {}): Promise<Marketplace> => {
    const response = await post(user, body(name, extra));
    if (response.statusCode !== 201) throw new Error(`marketplace: ${response.statusCode} ${response.body}`);
    return response.json();
  };
  const list = async (user: TestUser): Promise<Marketplace[]> =>
    (await t.request({ method: 'GET', url: '/api/v1/marketplaces/', token: user.token })).json();
  const get = (user: TestUser, id: string) => t.request({ method: 'GET', url: `/api/v1/marketplaces/${id}`, token: user.token });
  const patch = (user: TestUser, id: string, payload: unknown) =>
    t.request({ method: 'PATCH', url: `/api/v1/marketplaces/${id}`, token: user.token, payload: payload as object });
  const remove = (user: TestUser, id: string) => t.request({ method: 'DELETE', url: `/api/v1/marketplaces/${id}`, token: user.token });
  const defaults = async (user: TestUser) => (await list(user)).filter((m) => m.is_default).map((m) => m.name);

  /** No response may carry a password, under any key or as a value. */
  const expectNoPassword = (response: LightMyRequestResponse, ...secrets: string[]) => {
    expect(response.body.toLowerCase()).not.toContain('password');
    for (const secret of secrets) expect(response.body).not.toContain(secret);
  };

  describe('create', () => {
    test('creates a marketplace and answers its view without any password', async () => {
      const user = await t.user();
      const payload = body('SyftHub', {
        accounting_url: 'https://accounting.example.com/',
        accounting_email: 'billing@example.com',
        accounting_password: 'accounting-secret',
      });
      const response = await post(user, payload);
      expect(response.statusCode).toBe(201);
      const view = response.json();
      expect(Object.keys(view).sort()).toEqual(VIEW_KEYS);
      expect(view).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'SyftHub',
        url: hub.url,
        username: payload.username,
        email: 'alice@hub.example.com',
        is_default: true,
        is_active: true,
        accounting_url: expect.stringMatching(/^https:\/\/accounting\.example\.com\/?$/),
        accounting_email: 'billing@example.com',
        created_at: expect.stringMatching(ISO_UTC),
        updated_at: expect.stringMatching(ISO_UTC),
      });
      expectNoPassword(response, 'hub-password-secret', 'accounting-secret');
    });

    test('optional fields default to null and active', async () => {
      const user = await t.user();
      const response = await post(user, { name: 'Bare', url: hub.url, username: 'u', password: 'p' });
      expect(response.statusCode).toBe(201);
      expect(response.json()).toMatchObject({
        email: null,
        accounting_url: null,
        accounting_email: null,
        is_active: true,
        is_default: true,
      });
    });

    test('can create an inactive marketplace', async () => {
      const user = await t.user();
      const response = await post(user, body('Sleeping', { is_active: false }));
      expect(response.json().is_active).toBe(false);
    });

    test('refuses a url that is not http(s)', async () => {
      for (const url of ['ftp://x', 'not a url', '', 42]) {
        expect(issueLocs(await post(alice, body('bad-url', { url })))).toEqual(['body.url']);
      }
      expect(issueLocs(await post(alice, body('bad-accounting-url', { accounting_url: 'ftp://x' })))).toEqual(['body.accounting_url']);
    });

    test('refuses an http(s) url without a host', async () => {
      for (const url of ['https://', 'http:///path']) {
        expect(issueLocs(await post(alice, body('hostless-url', { url })))).toEqual(['body.url']);
      }
      expect(issueLocs(await post(alice, body('hostless-accounting-url', { accounting_url: 'https://' })))).toEqual([
        'body.accounting_url',
      ]);
    });

    test('refuses a missing password or username', async () => {
      const { password: _password, ...noPassword } = body('no-password');
      expect(issueLocs(await post(alice, noPassword))).toEqual(['body.password']);
      expect(issueLocs(await post(alice, body('empty-password', { password: '' })))).toEqual(['body.password']);
      const { username: _username, ...noUsername } = body('no-username');
      expect(issueLocs(await post(alice, noUsername))).toEqual(['body.username']);
    });

    test('refuses a bad email or accounting_email', async () => {
      expect(issueLocs(await post(alice, body('bad-email', { email: 'not-an-email' })))).toEqual(['body.email']);
      expect(issueLocs(await post(alice, body('bad-accounting-email', { accounting_email: 'x@' })))).toEqual(['body.accounting_email']);
    });

    test('refuses wrong types, a huge name and a non-object body', async () => {
      expect(issueLocs(await post(alice, body('typed', { is_default: 'yes' })))).toEqual(['body.is_default']);
      expect(issueLocs(await post(alice, body('n'.repeat(201))))).toEqual(['body.name']);
      expect(issueLocs(await post(alice, { ...body('x'), name: 5 }))).toEqual(['body.name']);
      for (const payload of ['{bad json', '["a"]']) {
        const response = await t.request({
          method: 'POST',
          url: '/api/v1/marketplaces/',
          token: alice.token,
          payload,
          headers: { 'content-type': 'application/json' },
        });
        expect(issueLocs(response)).toEqual(['body']);
      }
    });

    test('refuses a duplicate name in the same tenant with 409, allows it in another tenant', async () => {
      await create(alice, 'Duplicate');
      const again = await post(alice, body('Duplicate'));
      expect(again.statusCode).toBe(409);
      expect(typeof again.json().detail).toBe('string');
      expect((await post(bob, body('Duplicate'))).statusCode).toBe(201);
    });
  });

  describe('the default marketplace', () => {
    test('the first marketplace of a tenant becomes its default, later ones do not', async () => {
      const user = await t.user();
      const first = await create(user, 'first');
      const second = await create(user, 'second');
      expect(first.is_default).toBe(true);
      expect(second.is_default).toBe(false);
      expect(await defaults(user)).toEqual(['first']);
    });

    test('the first marketplace is the default even when is_default false is sent', async () => {
      const user = await t.user();
      const first = await create(user, 'first', { is_default: false });
      expect(first.is_default).toBe(true);
    });

    test('creating another with is_default true moves the default', async () => {
      const user = await t.user();
      await create(user, 'first');
      const second = await create(user, 'second', { is_default: true });
      expect(second.is_default).toBe(true);
      expect(await defaults(user)).toEqual(['second']);
    });

    test('PATCH is_default true moves the default', async () => {
      const user = await t.user();
      await create(user, 'first');
      const second = await create(user, 'second');
      await create(user, 'third');
      const response = await patch(user, second.id, { is_default: true });
      expect(response.statusCode).toBe(200);
      expect(response.json().is_default).toBe(true);
      expect(await defaults(user)).toEqual(['second']);
    });

    test('PATCH is_default false on the default is 422, and it stays the default', async () => {
      const user = await t.user();
      const first = await create(user, 'first');
      await create(user, 'second');
      expect(issueLocs(await patch(user, first.id, { is_default: false }))).toEqual(['body.is_default']);
      expect(await defaults(user)).toEqual(['first']);
    });

    test('DELETE of the default promotes the oldest remaining marketplace', async () => {
      const user = await t.user();
      await create(user, 'oldest');
      await create(user, 'middle');
      const newest = await create(user, 'newest', { is_default: true });
      expect(await defaults(user)).toEqual(['newest']);
      expect((await remove(user, newest.id)).statusCode).toBe(200);
      expect(await defaults(user)).toEqual(['oldest']);
    });

    test('DELETE of a non-default marketplace keeps the default', async () => {
      const user = await t.user();
      await create(user, 'keeper');
      const other = await create(user, 'other');
      expect((await remove(user, other.id)).statusCode).toBe(200);
      expect(await defaults(user)).toEqual(['keeper']);
    });

    test('DELETE of the last marketplace leaves none, and the next one becomes default', async () => {
      const user = await t.user();
      const only = await create(user, 'only');
      expect((await remove(user, only.id)).statusCode).toBe(200);
      expect(await list(user)).toEqual([]);
      expect((await create(user, 'again')).is_default).toBe(true);
    });

    test("one tenant's default does not touch another tenant's", async () => {
      const one = await t.user();
      const two = await t.user();
      await create(one, 'one-first');
      await create(two, 'two-first');
      await create(one, 'one-second', { is_default: true });
      expect(await defaults(one)).toEqual(['one-second']);
      expect(await defaults(two)).toEqual(['two-first']);
    });
  });

  describe('secrets', () => {
    test('password and accounting_password are stored encrypted, never in clear', async () => {
      const user = await t.user();
      const created = await create(user, 'encrypted', {
        username: 'enc-user',
        password: 'plain-hub-pass-1',
        accounting_password: 'plain-acct-pass-1',
      });
      const row = await t.services.database.db
        .selectFrom('marketplaces')
        .selectAll()
        .where('id', '=', created.id)
        .executeTakeFirstOrThrow();
      const raw = JSON.stringify(row);
      expect(raw).not.toContain('plain-hub-pass-1');
      expect(raw).not.toContain('plain-acct-pass-1');
      expect(row.password).toStartWith('enc:');
      expect(row.accounting_password).toStartWith('enc:');
    });

    test('a PATCH of the password stores the new one encrypted and answers no password', async () => {
      const user = await t.user();
      const created = await create(user, 'rotate', { username: 'rotator', password: 'rotator-pass-1' });
      hub.setPassword('rotator', 'rotated-pass-2');
      const response = await patch(user, created.id, { password: 'rotated-pass-2', accounting_password: 'rotated-acct-2' });
      expect(response.statusCode).toBe(200);
      expectNoPassword(response, 'rotated-pass-2', 'rotated-acct-2');
      const row = await t.services.database.db
        .selectFrom('marketplaces')
        .selectAll()
        .where('id', '=', created.id)
        .executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain('rotated-pass-2');
      expect(JSON.stringify(row)).not.toContain('rotated-acct-2');
    });

    test('no password appears in list or detail', async () => {
      const user = await t.user();
      const created = await create(user, 'quiet', { accounting_password: 'acct-quiet' });
      expectNoPassword(
        await t.request({ method: 'GET', url: '/api/v1/marketplaces/', token: user.token }),
        'hub-password-secret',
        'acct-quiet',
      );
      expectNoPassword(await get(user, created.id), 'hub-password-secret', 'acct-quiet');
    });
  });

  describe('list, detail, update and delete', () => {
    test('lists as a plain array, or the envelope with skip/limit', async () => {
      const user = await t.user();
      for (const name of ['a', 'b', 'c']) await create(user, name);
      expect((await list(user)).map((m) => m.name)).toEqual(['a', 'b', 'c']);
      const page = (await t.request({ method: 'GET', url: '/api/v1/marketplaces/?skip=1&limit=1', token: user.token })).json();
      expect(page).toMatchObject({ total: 3, skip: 1, limit: 1 });
      expect(page.items.map((m: Marketplace) => m.name)).toEqual(['b']);
      expect(issueLocs(await t.request({ method: 'GET', url: '/api/v1/marketplaces/?limit=0', token: user.token }))).toEqual([
        'query.limit',
      ]);
    });

    test('GET answers the view, 404 for an unknown id', async () => {
      const created = await create(alice, 'detail');
      const response = await get(alice, created.id);
      expect(response.statusCode).toBe(200);
      expect(Object.keys(response.json()).sort()).toEqual(VIEW_KEYS);
      expect((await get(alice, UNKNOWN_ID)).statusCode).toBe(404);
    });

    test('PATCH changes the given fields only', async () => {
      const created = await create(alice, 'patch-me');
      const { username } = (await get(alice, created.id)).json();
      const response = await patch(alice, created.id, { name: 'patched', url: other.url, is_active: false });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ name: 'patched', url: other.url, is_active: false, username });
    });

    test('PATCH validates like create', async () => {
      const created = await create(alice, 'patch-validate');
      expect(issueLocs(await patch(alice, created.id, { url: 'ftp://x' }))).toEqual(['body.url']);
      expect(issueLocs(await patch(alice, created.id, { email: 'nope' }))).toEqual(['body.email']);
      validationIssues(await patch(alice, created.id, {}));
    });

    test('PATCH to a name the tenant already uses is 409', async () => {
      await create(alice, 'taken');
      const created = await create(alice, 'wants-taken');
      expect((await patch(alice, created.id, { name: 'taken' })).statusCode).toBe(409);
    });

    test('DELETE answers {message}', async () => {
      const created = await create(alice, 'delete-me');
      const response = await remove(alice, created.id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: expect.any(String) });
      expect((await get(alice, created.id)).statusCode).toBe(404);
    });
  });

  describe('authentication and tenant isolation', () => {
    const routes = () => [
      { method: 'POST' as const, url: '/api/v1/marketplaces/', payload: body('x') },
      { method: 'GET' as const, url: '/api/v1/marketplaces/' },
      { method: 'GET' as const, url: `/api/v1/marketplaces/${UNKNOWN_ID}` },
      { method: 'PATCH' as const, url: `/api/v1/marketplaces/${UNKNOWN_ID}`, payload: { name: 'y' } },
      { method: 'DELETE' as const, url: `/api/v1/marketplaces/${UNKNOWN_ID}` },
    ];

    test('every marketplace route is 401 without a token', async () => {
      for (const route of routes()) {
        const response = await t.request(route);
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: 'Not authenticated' });
      }
    });

    test('every marketplace route is 401 with a bad token', async () => {
      for (const route of routes()) {
        const response = await t.request({ ...route, token: 'bad-token' });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: 'Could not validate credentials' });
      }
    });

    test("does not return, change or delete another tenant's marketplace", async () => {
      const created = await create(alice, 'alice-private');
      expect((await get(bob, created.id)).statusCode).toBe(404);
      expect((await patch(bob, created.id, { name: 'stolen' })).statusCode).toBe(404);
      expect((await patch(bob, created.id, { is_default: true })).statusCode).toBe(404);
      expect((await remove(bob, created.id)).statusCode).toBe(404);
      expect((await get(alice, created.id)).json().name).toBe('alice-private');
      expect((await list(bob)).map((m) => m.id)).not.toContain(created.id);
    });
  });
});
