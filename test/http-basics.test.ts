import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import Fastify from 'fastify';
import { LeaseLostError } from '../src/coordination/leases.ts';
import { registerErrorHandler } from '../src/http/error-handler.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { createDataset, createEndpoint, createModel } from './helpers/fixtures.ts';

describe('HTTP basics', () => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ SVC_CORS_ORIGINS: 'https://app.example.com' });
    user = await t.user();
  });
  afterAll(() => t.close());

  test('health answers status and version without credentials', async () => {
    const response = await t.request({ method: 'GET', url: '/api/v1/health' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  test('every response carries a request id, the caller’s own when it is sane', async () => {
    const fresh = await t.request({ method: 'GET', url: '/api/v1/health' });
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const given = await t.request({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers['x-request-id']).toBe('trace-123');
    const hostile = await t.request({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': 'bad id\nwith newline' } });
    expect(hostile.headers['x-request-id']).not.toContain('bad id');
  });

  test('CORS allows the development frontend and configured origins with credentials', async () => {
    for (const origin of ['http://localhost:5173', 'https://app.example.com']) {
      const preflight = await t.request({
        method: 'OPTIONS',
        url: '/api/v1/endpoints/',
        headers: { origin, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization,content-type' },
      });
      expect(preflight.statusCode).toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBe(origin);
      expect(preflight.headers['access-control-allow-credentials']).toBe('true');
      expect(String(preflight.headers['access-control-allow-methods'])).toBe('GET, POST, PATCH, DELETE, OPTIONS');
      expect(String(preflight.headers['access-control-allow-headers'])).toContain('Authorization');
    }
    const other = await t.request({ method: 'GET', url: '/api/v1/health', headers: { origin: 'https://evil.example' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('the OpenAPI document is generated from the route schemas and /docs serves a page', async () => {
    const spec = await t.request({ method: 'GET', url: '/docs/json' });
    expect(spec.statusCode).toBe(200);
    const document = spec.json();
    expect(document.openapi).toMatch(/^3\./);
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/api/v1/endpoints/', '/api/v1/policies/{id}', '/api/v1/auth/login', '/policies/']),
    );
    const page = await t.request({ method: 'GET', url: '/docs' });
    expect([200, 302]).toContain(page.statusCode);
  });

  test('an unknown route is a 404 with a detail', async () => {
    const response = await t.request({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(response.statusCode).toBe(404);
    expect(response.json().detail).toEqual(expect.any(String));
  });

  test('a body that is not JSON, or not an object, is a 422 on body', async () => {
    const cases = [
      { payload: '{"name": ', headers: { 'content-type': 'application/json' } },
      { payload: '[1,2,3]', headers: { 'content-type': 'application/json' } },
      { payload: '"just a string"', headers: { 'content-type': 'application/json' } },
      { payload: 'null', headers: { 'content-type': 'application/json' } },
      { payload: '', headers: { 'content-type': 'application/json' } },
    ];
    for (const { payload, headers } of cases) {
      const response = await t.request({ method: 'POST', url: '/api/v1/models/', token: user.token, payload, headers });
      expect(response.statusCode).toBe(422);
      expect(issueLocs(response)).toEqual(['body']);
    }
  });

  test('a body that is not JSON at all is a 415: state-changing routes take application/json only', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const response = await t.request({
        method: 'POST',
        url: '/api/v1/models/',
        token: user.token,
        payload: 'name=x',
        headers: { 'content-type': type },
      });
      expect(response.statusCode).toBe(415);
      expect(response.json().detail).toContain('application/json');
    }
  });

  test('a body over 1 MiB is refused with 413, not a crash', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: user.token,
      payload: JSON.stringify({ name: 'x'.repeat(1_100_000) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(413);
  });

  test('garbage of every kind on every body route gets a 4xx, never a 5xx', async () => {
    const dataset = await createDataset(t, user, 'garbage-ds');
    const model = await createModel(t, user, 'garbage-model');
    const endpoint = await createEndpoint(t, user, { slug: 'garbage-ep', dataset_id: dataset.id, model_id: model.id });
    const routes: [string, string][] = [
      ['POST', '/api/v1/auth/register'],
      ['POST', '/api/v1/auth/login'],
      ['POST', '/api/v1/datasets/'],
      ['PATCH', `/api/v1/datasets/${dataset.id}`],
      ['POST', '/api/v1/models/'],
      ['PATCH', `/api/v1/models/${model.id}`],
      ['POST', '/api/v1/endpoints/'],
      ['PATCH', `/api/v1/endpoints/${endpoint.slug}`],
      ['POST', `/api/v1/endpoints/${endpoint.slug}/publish`],
      ['POST', `/api/v1/endpoints/${endpoint.slug}/unpublish`],
      ['POST', '/api/v1/policies/'],
      ['POST', '/api/v1/marketplaces/'],
      ['PATCH', '/api/v1/settings/public-url'],
      ['POST', `/api/v1/tenants/${user.tenant}/members`],
      ['POST', '/api/v1/settings/proxy'],
      ['POST', `/api/v1/endpoints/${endpoint.slug}/query`],
    ];
    const garbage: unknown[] = [
      {},
      { name: null, slug: null, dtype: null, configuration: null, email: null, password: null },
      { name: 12, slug: [], dtype: {}, configuration: 'x', email: true, password: 1, dataset_id: 3, public_url: 9 },
      { name: 'x'.repeat(100_000), configuration: { ['k'.repeat(500)]: 'v' }, email: `${'a'.repeat(300)}@x.io` },
      { configuration: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])) },
      { configuration: { ingestionPath: '\u0000/etc', model_path: '../../etc/passwd', api_key: { nested: [1] }, chunkSize: 1e308 } },
      { configuration: { mode: 'allow', patterns: ['(a+)+$', '\\'] }, policy_type: 'access', endpoint_id: endpoint.id, name: '' },
      { __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } },
      { slug: 'abc\u0000', email: 'x@\u0000.io', public_url: 'http://\ud800' },
    ];
    for (const [method, url] of routes) {
      for (const payload of garbage) {
        const response = await t.request({ method: method as 'POST', url, token: user.token, payload: payload as object });
        if (response.statusCode >= 500)
          throw new Error(`${method} ${url} answered ${response.statusCode} to ${JSON.stringify(payload).slice(0, 200)}: ${response.body}`);
        if (response.statusCode < 400)
          throw new Error(`${method} ${url} accepted ${JSON.stringify(payload).slice(0, 200)}: ${response.body.slice(0, 300)}`);
      }
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

test('a server error answers a bare 500 detail, never the internal message', async () => {
  const app = Fastify({ logger: false });
  registerErrorHandler(app);
  app.get('/boom', async () => {
    throw new Error('secret internal detail at /home/user/db');
  });
  const response = await app.inject({ method: 'GET', url: '/boom' });
  expect(response.statusCode).toBe(500);
  expect(response.json()).toEqual({ detail: 'Internal server error' });
  await app.close();
});

test("a write refused because this replica lost a dataset's lease answers 503, never a 500", async () => {
  const app = Fastify({ logger: false });
  registerErrorHandler(app);
  app.post('/reindex', async () => {
    throw new LeaseLostError('dataset:6f1c1a4e-0000-4000-8000-000000000000', 'taken over');
  });
  const response = await app.inject({ method: 'POST', url: '/reindex' });
  expect(response.statusCode).toBe(503);
  expect(response.json().detail).toContain('try again');
  await app.close();
});
