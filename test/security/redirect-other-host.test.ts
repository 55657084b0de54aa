import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type HostileServer, startHostileServer } from '../fakes/hostile-server.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 2: a server a tenant configured could answer with a redirect and have knode follow it
 * to any other host (with the request's bearer key). knode follows a redirect only on the same host, and
 * only for GET and HEAD; any other comes back as the 3xx it is and the other host never hears of it.
 * Both servers listen on loopback under two names (127.0.0.1 and localhost), and the caller is the first
 * owner, who may call both: only the redirect rule keeps the second one out.
 */
describe('security: a redirect to another host is not followed', () => {
  let t: TestApp;
  let owner: TestUser;
  let redirecting: HostileServer;
  let elsewhere: HostileServer;

  beforeAll(async () => {
    t = await createTestApp({ SVC_OUTBOUND_ALLOW: '' });
    owner = await t.user('redirect-owner');
    redirecting = startHostileServer('127.0.0.1');
    elsewhere = startHostileServer('localhost');
    elsewhere.answer({ kind: 'models', ids: ['stolen'] });
  });
  afterAll(async () => {
    await t.close();
    await redirecting.close();
    await elsewhere.close();
  });

  test('model discovery: the 302 is the answer; the other host sees nothing', async () => {
    redirecting.answer({ kind: 'redirect', location: `http://localhost:${elsewhere.port}/v1/models` });
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/models/discover',
      token: owner.token,
      payload: { base_url: `${redirecting.url}/v1`, api_key: 'sk-must-not-travel-1234' },
    });
    expect(response.json()).toMatchObject({ reachable: false, error: 'The server answered 302' });
    expect(elsewhere.requests).toEqual([]);
  });

  test("a model's chat (POST, 307) and health (GET, 301): not followed either", async () => {
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'redirected', dtype: 'openai', configuration: { model: 'stolen', base_url: `${redirecting.url}/v1` } },
    });
    expect(created.statusCode).toBe(201);
    redirecting.answer({ kind: 'redirect', status: 307, location: `http://localhost:${elsewhere.port}/v1/chat/completions` });
    const tested = await t.request({ method: 'POST', url: `/api/v1/models/${created.json().id}/test`, token: owner.token, payload: {} });
    expect(tested.statusCode).toBe(502);
    redirecting.answer({ kind: 'redirect', status: 301, location: `http://localhost:${elsewhere.port}/v1/models` });
    const health = await t.request({ method: 'GET', url: `/api/v1/models/${created.json().id}/health`, token: owner.token });
    expect(health.json()).toMatchObject({ healthy: false });
    expect(elsewhere.requests).toEqual([]);
  });

  test('a marketplace login that redirects elsewhere is reported, not followed', async () => {
    redirecting.answer({ kind: 'redirect', status: 307, location: `http://localhost:${elsewhere.port}/api/v1/auth/login` });
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/marketplaces/',
      token: owner.token,
      payload: { name: 'moved', url: redirecting.url, username: 'owner', password: 'hub-password-not-for-them' },
    });
    expect(response.statusCode).toBe(502);
    expect(response.json().detail).toContain('redirects');
    expect(elsewhere.requests).toEqual([]);
  });

  test('a redirect on the same host is followed (and checked again)', async () => {
    redirecting.answer({ kind: 'redirect', location: '/v2/models' });
    const first = await t.request({
      method: 'POST',
      url: '/api/v1/models/discover',
      token: owner.token,
      payload: { base_url: `${redirecting.url}/v1` },
    });
    // The same server answers the redirect again at /v2/models: followed until the limit, then the 302 stands.
    expect(first.json()).toMatchObject({ reachable: false, error: 'The server answered 302' });
    expect(redirecting.requests.filter((request) => request.path === '/v2/models').length).toBeGreaterThan(0);
    expect(elsewhere.requests).toEqual([]);
  });
});
