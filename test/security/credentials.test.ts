import { describe, expect, test } from 'bun:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createTestApp } from '../helpers/app.ts';
import { ADMIN_KEY } from '../helpers/constants.ts';

/** Issue 11, item 6: the smaller findings about credentials. */
describe('security: credentials', () => {
  test('guessing admin keys from one address is stopped after 10 failures a minute (429 with Retry-After)', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY });
    try {
      const guess = (address: string, key: string) =>
        t.request({ method: 'GET', url: '/api/v1/settings/public-url', token: key, headers: { 'x-forwarded-for': address } });
      for (let attempt = 0; attempt < 10; attempt++) expect((await guess('203.0.113.9', `wrong-${attempt}`)).statusCode).toBe(401);
      // Failures count in windows aligned to the minute; the app's clock stands half a minute into one.
      const blocked = await guess('203.0.113.9', 'wrong-again');
      expect(blocked.statusCode).toBe(429);
      expect(blocked.headers['retry-after']).toBe('30');
      // Even the right key waits: the address is not allowed to try anything until the minute ends.
      t.clock.advance(29_000);
      expect((await guess('203.0.113.9', ADMIN_KEY)).statusCode).toBe(429);
      // Another address is not held back by it.
      expect((await guess('203.0.113.10', ADMIN_KEY)).statusCode).toBe(200);
      // The next minute, the address may try again.
      t.clock.advance(1_000);
      expect((await guess('203.0.113.9', ADMIN_KEY)).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  test('guessing passwords at /auth/login counts too', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    try {
      const user = await t.user('target');
      const login = (password: string) =>
        t.request({
          method: 'POST',
          url: '/api/v1/auth/login',
          headers: { 'x-forwarded-for': '198.51.100.4' },
          payload: { email: user.email, password },
        });
      for (let attempt = 0; attempt < 10; attempt++) expect((await login(`guess-${attempt}`)).statusCode).toBe(401);
      expect((await login(user.password)).statusCode).toBe(429);
    } finally {
      await t.close();
    }
  });

  test('guessing satellite tokens at the query route through the tunnel is stopped too', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY });
    try {
      const query = () =>
        t.request({
          method: 'POST',
          url: '/api/v1/endpoints/anything/query',
          token: `sat_live_${crypto.randomUUID()}`,
          headers: { 'x-forwarded-for': '192.0.2.44' },
          payload: { messages: 'hello' },
        });
      for (let attempt = 0; attempt < 10; attempt++) expect((await query()).statusCode).toBe(401);
      expect((await query()).statusCode).toBe(429);
    } finally {
      await t.close();
    }
  });

  test('tools on this machine are not locked out by their own mistakes', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY });
    try {
      for (let attempt = 0; attempt < 15; attempt++) {
        expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url', token: 'wrong' })).statusCode).toBe(401);
      }
      expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url', token: ADMIN_KEY })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  test('an admin key with whitespace, which could never match a bearer header, stops start-up with one line', () => {
    for (const key of ['has a space in it, long enough', 'trailing-newline-long-enough\n', '\tleading-tab-long-enough']) {
      expect(() => loadConfig({ SVC_ADMIN_API_KEY: key })).toThrow(ConfigError);
      try {
        loadConfig({ SVC_ADMIN_API_KEY: key });
      } catch (error) {
        const message = (error as Error).message;
        expect(message).toContain('SVC_ADMIN_API_KEY');
        expect(message).not.toContain(key.trim()); // the key itself is never printed
        expect(message.split('\n')).toHaveLength(1);
      }
    }
  });

  test('an admin key short enough to guess stops start-up', () => {
    expect(() => loadConfig({ SVC_ADMIN_API_KEY: 'short-key' })).toThrow('at least 16 characters');
    expect(loadConfig({ SVC_ADMIN_API_KEY: 'sixteen-chars-ok' }).adminApiKey).toBe('sixteen-chars-ok');
  });

  test('registering with the admin key in multi-tenancy mode creates the tenant it names, without X-Tenant-Name', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_MULTI_TENANCY: 'true' });
    try {
      const response = await t.request({
        method: 'POST',
        url: '/api/v1/auth/register',
        token: ADMIN_KEY,
        payload: { email: 'newcomer@example.com', password: 'a long password', tenant_name: 'newcomer' },
      });
      expect(response.statusCode).toBe(201);
      expect(response.json().tenant_name).toBe('newcomer');
      const tenant = await t.request({
        method: 'GET',
        url: '/api/v1/tenants/newcomer',
        token: ADMIN_KEY,
        headers: { 'x-tenant-name': 'newcomer' },
      });
      expect(tenant.statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  test("the admin key's X-Tenant-Name confines the members routes to that tenant", async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    try {
      const alice = await t.user('alice');
      const bob = await t.user('bob');
      const asAliceTenant = { 'x-tenant-name': alice.tenant };
      const own = await t.request({
        method: 'GET',
        url: `/api/v1/tenants/${alice.tenant}/members`,
        token: ADMIN_KEY,
        headers: asAliceTenant,
      });
      expect(own.statusCode).toBe(200);
      const other = await t.request({
        method: 'GET',
        url: `/api/v1/tenants/${bob.tenant}/members`,
        token: ADMIN_KEY,
        headers: asAliceTenant,
      });
      expect(other.statusCode).toBe(403);
      const add = await t.request({
        method: 'POST',
        url: `/api/v1/tenants/${bob.tenant}/members`,
        token: ADMIN_KEY,
        headers: asAliceTenant,
        payload: { email: alice.email },
      });
      expect(add.statusCode).toBe(403);
      // Without X-Tenant-Name the admin key is the operator of every tenant.
      expect((await t.request({ method: 'GET', url: `/api/v1/tenants/${bob.tenant}/members`, token: ADMIN_KEY })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});
