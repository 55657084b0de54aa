import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type HostileServer, startHostileServer } from '../fakes/hostile-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir, validationIssues } from '../helpers/app.ts';

/**
 * Issue 22, item 2: any tenant's user could make knode call services on knode's own machine and network
 * (a model base_url of http://127.0.0.1:<port>, or a private address) and read what they answered. Loopback
 * and private addresses are the first owner's (a local Ollama is the common case), and the admin key's;
 * another tenant reaches them only where the operator allows it (SVC_OUTBOUND_ALLOW). These tests run
 * without the `loopback` that the other tests' apps allow.
 */
describe("security: another tenant's model at 127.0.0.1 is refused unless the operator allows loopback", () => {
  let t: TestApp;
  let owner: TestUser;
  let other: TestUser;
  let local: HostileServer;

  const createModel = (user: TestUser, base_url: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: user.token,
      payload: { name: `m-${crypto.randomUUID().slice(0, 8)}`, dtype: 'openai', configuration: { model: 'llama3.2', base_url } },
    });
  const discover = (user: TestUser, base_url: string) =>
    t.request({ method: 'POST', url: '/api/v1/models/discover', token: user.token, payload: { base_url } });

  beforeAll(async () => {
    local = startHostileServer();
    local.answer({ kind: 'models', ids: ['llama3.2'] });
    t = await createTestApp({ SVC_OUTBOUND_ALLOW: '' });
    owner = await t.user('laptop-owner'); // development mode: the first registered user is the first owner
    other = await t.user('another-tenant');
  });
  afterAll(async () => {
    await t.close();
    await local.close();
  });

  test("the first owner's local Ollama-style server is allowed: discovery, the model, its health", async () => {
    const found = (await discover(owner, `${local.url}/v1`)).json();
    expect(found).toMatchObject({ reachable: true, models: [{ id: 'llama3.2' }] });
    const created = await createModel(owner, `${local.url}/v1`);
    expect(created.statusCode).toBe(201);
    const health = await t.request({ method: 'GET', url: `/api/v1/models/${created.json().id}/health`, token: owner.token });
    expect(health.json()).toMatchObject({ healthy: true });
  });

  test('another tenant: 422 on the field, naming SVC_OUTBOUND_ALLOW, and not one request reaches the server', async () => {
    const before = local.requests.length;
    for (const base_url of [
      `${local.url}/v1`,
      `http://localhost:${local.port}/v1`,
      `http://[::1]:${local.port}/v1`,
      'http://0.0.0.0:11434/v1',
    ]) {
      const [issue] = validationIssues(await createModel(other, base_url));
      expect(issue?.loc).toEqual(['body', 'configuration', 'base_url']);
      expect(issue?.msg).toContain('SVC_OUTBOUND_ALLOW=loopback');
      expect(issueLocs(await discover(other, base_url))).toEqual(['body.base_url']);
    }
    expect(local.requests.length).toBe(before);
  });

  test('another tenant: its marketplace, accounting, wallet RPC and embedder on loopback are refused alike (422)', async () => {
    const before = local.requests.length;
    const marketplace = await t.request({
      method: 'POST',
      url: '/api/v1/marketplaces/',
      token: other.token,
      payload: { name: 'local-hub', url: local.url, username: 'u', password: 'p' },
    });
    expect(issueLocs(marketplace)).toEqual(['body.url']);
    const wallet = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: other.token,
      payload: { wallet_address: `0x${'ef'.repeat(20)}`, testnet: true, rpc_url: `${local.url}/rpc` },
    });
    expect(issueLocs(wallet)).toEqual(['body.rpc_url']);
    const dataset = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: other.token,
      payload: {
        name: 'local-embedder',
        dtype: 'local_file',
        configuration: { ingestionPath: t.dataDir, embedder: 'openai:nomic-embed-text', base_url: `${local.url}/v1` },
      },
    });
    expect(issueLocs(dataset)).toEqual(['body.configuration.base_url']);
    expect(local.requests.length).toBe(before);
  });

  test('another tenant: private network addresses are refused alike (decided before any connection)', async () => {
    for (const base_url of ['http://10.0.0.5:11434/v1', 'http://192.168.1.20/v1', 'http://172.16.0.1/v1', 'http://[fd12::1]/v1']) {
      const [issue] = validationIssues(await createModel(other, base_url));
      expect(issue?.msg).toContain('SVC_OUTBOUND_ALLOW=private');
    }
  });

  test('a model stored while loopback was allowed is refused at call time (502 saying why), no request sent', async () => {
    const dataDir = tempDir();
    const before = local.requests.length;
    const first = await createTestApp({ SVC_OUTBOUND_ALLOW: 'loopback' }, dataDir);
    await first.user('first-owner-here');
    const tenant = await first.user('was-allowed');
    const created = await first.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: tenant.token,
      payload: { name: 'kept', dtype: 'openai', configuration: { model: 'llama3.2', base_url: `${local.url}/v1` } },
    });
    expect(created.statusCode).toBe(201);
    await first.close({ keepData: true });
    const again = await createTestApp({ SVC_OUTBOUND_ALLOW: '' }, dataDir);
    try {
      const token = (
        await again.request({ method: 'POST', url: '/api/v1/auth/login', payload: { email: tenant.email, password: tenant.password } })
      ).json().access_token as string;
      const tested = await again.request({ method: 'POST', url: `/api/v1/models/${created.json().id}/test`, token, payload: {} });
      expect(tested.statusCode).toBe(502);
      expect(tested.json().detail).toContain('loopback address');
      const health = await again.request({ method: 'GET', url: `/api/v1/models/${created.json().id}/health`, token });
      expect(health.json()).toMatchObject({ healthy: false });
      expect(health.json().message).toContain('SVC_OUTBOUND_ALLOW=loopback');
      expect(local.requests.length).toBe(before);
    } finally {
      await again.close();
    }
  });
});

describe('security: SVC_OUTBOUND_ALLOW opens loopback (or a range, or a host) to every tenant', () => {
  let local: HostileServer;

  beforeAll(() => {
    local = startHostileServer();
    local.answer({ kind: 'models', ids: ['llama3.2'] });
  });
  afterAll(async () => {
    await local.close();
  });

  for (const allow of ['loopback', '127.0.0.0/8', 'localhost']) {
    test(`SVC_OUTBOUND_ALLOW=${allow}`, async () => {
      const t = await createTestApp({ SVC_OUTBOUND_ALLOW: allow });
      try {
        await t.user('first');
        const other = await t.user('second');
        const host = allow === 'localhost' ? `http://localhost:${local.port}` : local.url;
        const created = await t.request({
          method: 'POST',
          url: '/api/v1/models/',
          token: other.token,
          payload: { name: 'allowed', dtype: 'openai', configuration: { model: 'llama3.2', base_url: `${host}/v1` } },
        });
        expect(created.statusCode).toBe(201);
        const found = await t.request({
          method: 'POST',
          url: '/api/v1/models/discover',
          token: other.token,
          payload: { base_url: `${host}/v1` },
        });
        expect(found.json()).toMatchObject({ reachable: true });
      } finally {
        await t.close();
      }
    });
  }

  test("the admin key's own discovery may reach loopback, in any tenant", async () => {
    const t = await createTestApp({ SVC_OUTBOUND_ALLOW: '', SVC_ADMIN_API_KEY: 'an-admin-key-long-enough' });
    try {
      const found = await t.request({
        method: 'POST',
        url: '/api/v1/models/discover',
        headers: { authorization: 'Bearer an-admin-key-long-enough' },
        payload: { base_url: `${local.url}/v1` },
      });
      expect(found.json()).toMatchObject({ reachable: true });
    } finally {
      await t.close();
    }
  });
});
