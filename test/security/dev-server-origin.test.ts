import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 3: in development mode a web page on `http://localhost:5173` (every Vite dev server's
 * default, always allowed by CORS) had the owner's rights: from a browser it registered a user, read
 * /metrics, granted itself a folder outside the roots and read a file there. A page of another origin is
 * not the owner's tool: CORS may let it read answers, but it needs a token like a remote client.
 */
describe('security: a page on the development frontend origin gets no owner rights in development mode', () => {
  let t: TestApp;
  let owner: TestUser;
  const page = { origin: 'http://localhost:5173' };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('owner');
  });
  afterAll(async () => {
    await t.close();
  });

  test('it cannot register a user (403)', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: page,
      payload: { email: 'page@example.com', password: 'a long password', tenant_name: 'page' },
    });
    expect(response.statusCode).toBe(403);
  });

  test('it cannot read /metrics, the settings or the storage use without a token (401)', async () => {
    for (const url of ['/metrics', '/api/v1/settings/public-url', '/api/v1/settings/proxy', '/api/v1/settings/storage']) {
      const response = await t.request({ method: 'GET', url, headers: page });
      expect(response.statusCode).toBe(401);
    }
  });

  test('it cannot grant a tenant a folder outside the roots (401), so it cannot read files there', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'knode-outside-'));
    const grant = await t.request({
      method: 'PATCH',
      url: `/api/v1/tenants/${owner.tenant}`,
      headers: page,
      payload: { ingestion_roots: [outside] },
    });
    expect(grant.statusCode).toBe(401);
    const browse = await t.request({ method: 'GET', url: `/api/v1/folders?path=${encodeURIComponent(outside)}`, headers: page });
    expect(browse.statusCode).toBe(401);
  });

  test('with a user token it works as a remote client, and CORS still answers the page', async () => {
    const response = await t.request({ method: 'GET', url: '/api/v1/settings/public-url', headers: page, token: owner.token });
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });

  test('a local tool (no Origin) and the console (its own origin) keep credential-free access', async () => {
    expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url' })).statusCode).toBe(200);
    const console = await t.request({ method: 'GET', url: '/api/v1/settings/public-url', headers: { origin: 'http://localhost:80' } });
    expect(console.statusCode).toBe(200);
  });
});
