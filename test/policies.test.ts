import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { createDataset, createEndpoint, createPolicy } from './helpers/fixtures.ts';

describe('policies', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let endpoint: { id: string; slug: string };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('powner');
    stranger = await t.user('pstranger');
    const dataset = await createDataset(t, owner);
    endpoint = await createEndpoint(t, owner, { slug: 'guarded-endpoint', dataset_id: dataset.id });
  });
  afterAll(() => t.close());

  const create = (payload: object, user = owner) => t.request({ method: 'POST', url: '/api/v1/policies/', token: user.token, payload });

  test('create answers 201 with the full policy', async () => {
    const response = await create({
      name: 'Only us',
      policy_type: 'access',
      endpoint_id: endpoint.id,
      configuration: { mode: 'allow', patterns: ['a@example.com', '.*@example\\.org'] },
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({
      id: expect.any(String),
      name: 'Only us',
      policy_type: 'access',
      configuration: { mode: 'allow', patterns: ['a@example.com', '.*@example\\.org'] },
      endpoint_id: endpoint.id,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  test('accounting defaults: enabled, no transaction token required', async () => {
    const policy = await createPolicy(t, owner, { policy_type: 'accounting', endpoint_id: endpoint.id, configuration: {} });
    expect(policy.configuration).toEqual({ enabled: true, require_transaction_token: false });
  });

  const invalid: [string, Record<string, unknown>, string[]][] = [
    ['access', {}, ['body.configuration.mode', 'body.configuration.patterns']],
    ['access', { mode: 'maybe', patterns: ['a@b.c'] }, ['body.configuration.mode']],
    ['access', { mode: 'allow', patterns: [] }, ['body.configuration.patterns']],
    ['access', { mode: 'allow', patterns: 'a@b.c' }, ['body.configuration.patterns']],
    ['access', { mode: 'deny', patterns: ['ok@b.c', '(unclosed', 7] }, ['body.configuration.patterns.1', 'body.configuration.patterns.2']],
    ['rate_limit', {}, ['body.configuration.rate']],
    ['rate_limit', { rate: '10/w' }, ['body.configuration.rate']],
    ['rate_limit', { rate: '0/m' }, ['body.configuration.rate']],
    ['rate_limit', { rate: 10 }, ['body.configuration.rate']],
    [
      'accounting',
      { enabled: 'yes', require_transaction_token: 1 },
      ['body.configuration.enabled', 'body.configuration.require_transaction_token'],
    ],
  ];
  for (const [type, configuration, locs] of invalid) {
    test(`${type} configuration ${JSON.stringify(configuration)} is refused`, async () => {
      const response = await create({ name: 'x', policy_type: type, endpoint_id: endpoint.id, configuration });
      expect(issueLocs(response).sort()).toEqual(locs);
    });
  }

  test('create validates the body itself', async () => {
    const response = await create({ name: '', policy_type: 'firewall', endpoint_id: 'nope', configuration: [] });
    expect(issueLocs(response).sort()).toEqual(['body.configuration', 'body.endpoint_id', 'body.name', 'body.policy_type']);
  });

  test("create answers 404 for an endpoint that is missing or another tenant's", async () => {
    const payload = { name: 'x', policy_type: 'rate_limit', configuration: { rate: '1/s' } };
    expect((await create({ ...payload, endpoint_id: crypto.randomUUID() })).statusCode).toBe(404);
    expect((await create({ ...payload, endpoint_id: endpoint.id }, stranger)).statusCode).toBe(404);
  });

  test('both list paths: /api/v1/policies with configuration, /policies/ without', async () => {
    const policy = await createPolicy(t, owner, { policy_type: 'rate_limit', endpoint_id: endpoint.id, configuration: { rate: '5/h' } });
    const withConfig = await t.request({ method: 'GET', url: `/api/v1/policies?endpoint_id=${endpoint.id}`, token: owner.token });
    expect(withConfig.statusCode).toBe(200);
    const item = withConfig.json().find((p: { id: string }) => p.id === policy.id);
    expect(item.configuration).toEqual({ rate: '5/h' });
    const root = await t.request({ method: 'GET', url: '/policies/', token: owner.token });
    expect(root.statusCode).toBe(200);
    const summary = root.json().find((p: { id: string }) => p.id === policy.id);
    expect(Object.keys(summary).sort()).toEqual(['created_at', 'endpoint_id', 'id', 'name', 'policy_type']);
    expect(issueLocs(await t.request({ method: 'GET', url: '/api/v1/policies?endpoint_id=xyz', token: owner.token }))).toEqual([
      'query.endpoint_id',
    ]);
    const paged = await t.request({ method: 'GET', url: '/policies/?limit=1', token: owner.token });
    expect(paged.json()).toMatchObject({ skip: 0, limit: 1, total: root.json().length });
  });

  test('PATCH renames and replaces the configuration after validating it for the type', async () => {
    const policy = await createPolicy(t, owner, { policy_type: 'rate_limit', endpoint_id: endpoint.id, configuration: { rate: '5/h' } });
    const url = `/api/v1/policies/${policy.id}`;
    const response = await t.request({
      method: 'PATCH',
      url,
      token: owner.token,
      payload: { name: 'faster', configuration: { rate: '50/m' } },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ name: 'faster', configuration: { rate: '50/m' }, policy_type: 'rate_limit' });
    expect(issueLocs(await t.request({ method: 'PATCH', url, token: owner.token, payload: { configuration: { mode: 'allow' } } }))).toEqual(
      ['body.configuration.rate'],
    );
    for (const field of ['policy_type', 'endpoint_id']) {
      const immutable = await t.request({ method: 'PATCH', url, token: owner.token, payload: { [field]: 'access' } });
      expect(immutable.json().detail[0]).toMatchObject({ loc: ['body', field], type: 'immutable_field' });
    }
    expect(issueLocs(await t.request({ method: 'PATCH', url, token: owner.token, payload: {} }))).toEqual(['body']);
    expect((await t.request({ method: 'GET', url, token: owner.token })).json().configuration).toEqual({ rate: '50/m' });
  });

  test('DELETE answers a message and the policy is gone', async () => {
    const policy = await createPolicy(t, owner, { policy_type: 'rate_limit', endpoint_id: endpoint.id, configuration: { rate: '5/h' } });
    const url = `/api/v1/policies/${policy.id}`;
    const response = await t.request({ method: 'DELETE', url, token: owner.token });
    expect(response.statusCode).toBe(200);
    expect(response.json().message).toEqual(expect.any(String));
    expect((await t.request({ method: 'GET', url, token: owner.token })).statusCode).toBe(404);
  });

  test('another tenant cannot see, change or delete a policy', async () => {
    const policy = await createPolicy(t, owner, { policy_type: 'rate_limit', endpoint_id: endpoint.id, configuration: { rate: '5/h' } });
    const url = `/api/v1/policies/${policy.id}`;
    expect((await t.request({ method: 'GET', url, token: stranger.token })).statusCode).toBe(404);
    expect((await t.request({ method: 'PATCH', url, token: stranger.token, payload: { name: 'x' } })).statusCode).toBe(404);
    expect((await t.request({ method: 'DELETE', url, token: stranger.token })).statusCode).toBe(404);
    for (const listUrl of ['/policies/', `/api/v1/policies?endpoint_id=${endpoint.id}`, '/api/v1/policies']) {
      const list = (await t.request({ method: 'GET', url: listUrl, token: stranger.token })).json();
      expect(list).toEqual([]);
    }
  });

  test('every policy route answers 401 without credentials', async () => {
    const policy = await createPolicy(t, owner, { policy_type: 'rate_limit', endpoint_id: endpoint.id, configuration: { rate: '5/h' } });
    const routes = [
      { method: 'POST' as const, url: '/api/v1/policies/', payload: {} },
      { method: 'GET' as const, url: '/api/v1/policies' },
      { method: 'GET' as const, url: '/policies/' },
      { method: 'GET' as const, url: `/api/v1/policies/${policy.id}` },
      { method: 'PATCH' as const, url: `/api/v1/policies/${policy.id}`, payload: { name: 'x' } },
      { method: 'DELETE' as const, url: `/api/v1/policies/${policy.id}` },
    ];
    for (const route of routes) {
      expect((await t.request(route)).statusCode).toBe(401);
      expect((await t.request({ ...route, token: 'bad' })).statusCode).toBe(401);
    }
  });
});
