import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';

const URL_PATH = '/api/v1/settings/public-url';

async function publicUrlOf(t: TestApp, tenantName: string): Promise<string | null> {
  return (await t.services.publicUrl.publicUrl(await t.tenant(tenantName))).public_url;
}

describe('settings in development mode (no SVC_ADMIN_API_KEY)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  test('GET public-url needs no credentials and is null before one is set', async () => {
    const response = await t.request({ method: 'GET', url: URL_PATH });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ public_url: null, source: null });
  });

  test('PATCH public-url needs no credentials and acts on the default tenant', async () => {
    const response = await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url: 'https://knode.example.com' } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ public_url: 'https://knode.example.com', source: 'set' });
    expect(await publicUrlOf(t, 'default')).toBe('https://knode.example.com');
    expect((await t.request({ method: 'GET', url: URL_PATH })).json()).toEqual({ public_url: 'https://knode.example.com', source: 'set' });
  });

  test('PATCH accepts http as well as https', async () => {
    const response = await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url: 'http://203.0.113.7:8080' } });
    expect(response.statusCode).toBe(200);
    expect(response.json().public_url).toMatch(/^http:\/\/203\.0\.113\.7:8080\/?$/);
  });

  test('PATCH refuses a missing public_url with 422 on body.public_url', async () => {
    const response = await t.request({ method: 'PATCH', url: URL_PATH, payload: {} });
    expect(issueLocs(response)).toEqual(['body.public_url']);
  });

  test('PATCH refuses a URL that is not http or https', async () => {
    for (const public_url of ['ftp://knode.example.com', 'file:///etc/hosts', 'javascript:alert(1)']) {
      expect(issueLocs(await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url } }))).toEqual(['body.public_url']);
    }
  });

  test('PATCH refuses a value that is not a URL', async () => {
    for (const public_url of ['not a url', '', 'knode.example.com', 42, null]) {
      expect(issueLocs(await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url } }))).toEqual(['body.public_url']);
    }
  });

  test('PATCH refuses an http(s) URL without a host', async () => {
    for (const public_url of ['https://', 'http:///knode']) {
      expect(issueLocs(await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url } }))).toEqual(['body.public_url']);
    }
  });

  test('PATCH refuses a body that is not JSON or not an object', async () => {
    for (const payload of ['{oops', '["https://x.example.com"]']) {
      const response = await t.request({ method: 'PATCH', url: URL_PATH, payload, headers: { 'content-type': 'application/json' } });
      expect(issueLocs(response)).toEqual(['body']);
    }
  });

  test('a refused PATCH leaves the stored URL unchanged', async () => {
    await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url: 'https://kept.example.com' } });
    await t.request({ method: 'PATCH', url: URL_PATH, payload: { public_url: 'ftp://nope' } });
    expect((await t.request({ method: 'GET', url: URL_PATH })).json()).toEqual({ public_url: 'https://kept.example.com', source: 'set' });
  });
});

describe('settings with SVC_ADMIN_API_KEY', () => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY });
    user = await t.user();
  });
  afterAll(() => t.close());

  const routes = [
    { method: 'GET' as const, url: URL_PATH },
    { method: 'PATCH' as const, url: URL_PATH, payload: { public_url: 'https://x.example.com' } },
  ];

  test('without a token every settings route is 401 Not authenticated', async () => {
    for (const route of routes) {
      const response = await t.request(route);
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ detail: 'Not authenticated' });
      expect(response.headers['www-authenticate']).toBe('Bearer');
    }
  });

  test('with a wrong token every settings route is 401 Could not validate credentials', async () => {
    for (const route of routes) {
      const response = await t.request({ ...route, token: 'not-the-admin-key' });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ detail: 'Could not validate credentials' });
    }
  });

  test("a user's JWT is 403 Insufficient permissions", async () => {
    for (const route of routes) {
      const response = await t.request({ ...route, token: user.token });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ detail: 'Insufficient permissions' });
    }
    expect(await publicUrlOf(t, user.tenant)).toBeNull();
  });

  test('the admin key reads and sets the public URL of the default tenant', async () => {
    const patched = await t.request({
      method: 'PATCH',
      url: URL_PATH,
      token: ADMIN_KEY,
      payload: { public_url: 'https://admin.example.com' },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toEqual({ public_url: 'https://admin.example.com', source: 'set' });
    const read = await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY });
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({ public_url: 'https://admin.example.com', source: 'set' });
    expect(await publicUrlOf(t, 'default')).toBe('https://admin.example.com');
  });

  test('X-Tenant-Name selects the tenant whose settings are read and changed', async () => {
    const other = await t.user();
    const as = (tenant: string) => ({ 'x-tenant-name': tenant });
    await t.request({ method: 'PATCH', url: URL_PATH, token: ADMIN_KEY, payload: { public_url: 'https://default.example.com' } });
    const one = await t.request({
      method: 'PATCH',
      url: URL_PATH,
      token: ADMIN_KEY,
      headers: as(user.tenant),
      payload: { public_url: 'https://one.example.com' },
    });
    expect(one.statusCode).toBe(200);
    expect((await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY, headers: as(other.tenant) })).json()).toEqual({
      public_url: null,
      source: null,
    });
    await t.request({
      method: 'PATCH',
      url: URL_PATH,
      token: ADMIN_KEY,
      headers: as(other.tenant),
      payload: { public_url: 'https://two.example.com' },
    });

    expect((await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY, headers: as(user.tenant) })).json()).toEqual({
      public_url: 'https://one.example.com',
      source: 'set',
    });
    expect((await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY, headers: as(other.tenant) })).json()).toEqual({
      public_url: 'https://two.example.com',
      source: 'set',
    });
    expect((await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY })).json()).toEqual({
      public_url: 'https://default.example.com',
      source: 'set',
    });
  });

  test('X-Tenant-Name naming an unknown tenant is 404', async () => {
    const response = await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY, headers: { 'x-tenant-name': 'no-such-tenant' } });
    expect(response.statusCode).toBe(404);
    expect(typeof response.json().detail).toBe('string');
  });

  test('the admin key gets the same validation as development mode', async () => {
    expect(issueLocs(await t.request({ method: 'PATCH', url: URL_PATH, token: ADMIN_KEY, payload: { public_url: 'ftp://x' } }))).toEqual([
      'body.public_url',
    ]);
  });
});

describe('settings with multi-tenancy', () => {
  test('the admin key must name a tenant with X-Tenant-Name', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_MULTI_TENANCY: 'true' });
    try {
      expect(issueLocs(await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY }))).toEqual(['header.x-tenant-name']);
      const named = await t.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY, headers: { 'x-tenant-name': 'default' } });
      expect(named.statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('settings across a restart', () => {
  test('the public URL persists across a restart', async () => {
    const dataDir = tempDir();
    const env = { SVC_ADMIN_API_KEY: ADMIN_KEY };
    try {
      const first = await createTestApp(env, dataDir);
      const user = await first.user();
      await first.request({ method: 'PATCH', url: URL_PATH, token: ADMIN_KEY, payload: { public_url: 'https://persist.example.com' } });
      await first.request({
        method: 'PATCH',
        url: URL_PATH,
        token: ADMIN_KEY,
        headers: { 'x-tenant-name': user.tenant },
        payload: { public_url: 'https://tenant-persist.example.com' },
      });
      await first.close({ keepData: true });

      const second = await createTestApp(env, dataDir);
      try {
        expect((await second.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY })).json()).toEqual({
          public_url: 'https://persist.example.com',
          source: 'set',
        });
        const tenant = await second.request({ method: 'GET', url: URL_PATH, token: ADMIN_KEY, headers: { 'x-tenant-name': user.tenant } });
        expect(tenant.json()).toEqual({ public_url: 'https://tenant-persist.example.com', source: 'set' });
      } finally {
        await second.close({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
