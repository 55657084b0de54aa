import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type HostileServer, startHostileServer } from '../fakes/hostile-server.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 2: model health and test returned another server's whole error body, discovery 200
 * characters of it and marketplace creation 300, so pointing a URL at an internal page read that page.
 * What knode repeats of an upstream error is its status and at most a short JSON message (`error.message`,
 * `detail`), cut to about 200 characters: never the body's text.
 */
const INTERNAL = 'INTERNAL-ADMIN-PAGE db_password=hunter2';
const PAGE = `<html><body><h1>Router admin</h1><p>${INTERNAL}</p></body></html>`;

describe("security: an upstream error's text is not in the answer", () => {
  let t: TestApp;
  let owner: TestUser;
  let server: HostileServer;
  let modelId: string;

  beforeAll(async () => {
    t = await createTestApp({ SVC_OUTBOUND_ALLOW: '' });
    owner = await t.user('error-text-owner');
    server = startHostileServer();
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'pages', dtype: 'openai', configuration: { model: 'm', base_url: `${server.url}/v1` } },
    });
    modelId = created.json().id;
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  const asks = () => [
    t.request({ method: 'POST', url: `/api/v1/models/${modelId}/test`, token: owner.token, payload: {} }),
    t.request({ method: 'GET', url: `/api/v1/models/${modelId}/health`, token: owner.token }),
    t.request({ method: 'POST', url: '/api/v1/models/discover', token: owner.token, payload: { base_url: `${server.url}/v1` } }),
    t.request({
      method: 'POST',
      url: '/api/v1/marketplaces/',
      token: owner.token,
      payload: { name: 'page', url: server.url, username: 'u', password: 'p' },
    }),
  ];

  for (const status of [400, 403, 500]) {
    test(`an HTML error page (${status}): the status is said, the page is not`, async () => {
      server.answer({ kind: 'page', status, body: PAGE });
      const answers = await Promise.all(asks());
      for (const response of answers) {
        expect(response.statusCode).not.toBe(500);
        expect(response.body).not.toContain(INTERNAL);
        expect(response.body).not.toContain('Router admin');
      }
      // The model's test, health and discovery name the status (a refused login says "refused the credentials").
      for (const response of answers.slice(0, 3)) expect(response.body).toContain(String(status));
    });
  }

  test('a plain-text error and a JSON body without a message are not quoted either', async () => {
    for (const [body, contentType] of [
      [INTERNAL, 'text/plain'],
      [JSON.stringify({ page: INTERNAL }), 'application/json'],
    ] as const) {
      server.answer({ kind: 'page', status: 502, body, contentType });
      for (const response of await Promise.all(asks())) expect(response.body).not.toContain(INTERNAL);
    }
  });

  test("a JSON error's message is said, cut to about 200 characters", async () => {
    const long = `Model not loaded. ${'z'.repeat(1000)} END-OF-A-LONG-MESSAGE`;
    server.answer({ kind: 'page', status: 503, body: JSON.stringify({ error: { message: long } }), contentType: 'application/json' });
    const [tested, health, discovered] = await Promise.all(asks());
    for (const response of [tested, health, discovered]) {
      expect(response?.body).toContain('Model not loaded.');
      expect(response?.body).not.toContain('END-OF-A-LONG-MESSAGE');
      expect(response?.body).not.toContain('z'.repeat(250));
    }
  });
});
