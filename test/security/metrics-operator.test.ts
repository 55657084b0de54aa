import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * Issue 22, item 5: in development mode any user's token read `/metrics`, every tenant's endpoint names
 * and traffic, also through the tunnel. It is the operator's: this machine's own tools without a token in
 * development mode, the admin key otherwise.
 */
describe("security: /metrics is the operator's only", () => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    user = await t.user('tenant-user');
  });
  afterAll(async () => {
    await t.close();
  });

  test("a user's token is refused in development mode (403), from this machine too", async () => {
    expect((await t.request({ method: 'GET', url: '/metrics', token: user.token })).statusCode).toBe(403);
  });

  test('nothing through the tunnel reads it, with or without a token (401, 403)', async () => {
    const tunnel = { host: 'owner.syfthub.ngrok.app', 'x-forwarded-for': '198.51.100.7' };
    expect((await t.request({ method: 'GET', url: '/metrics', headers: { ...tunnel, host: 'localhost' } })).statusCode).toBe(401);
    expect(
      (await t.request({ method: 'GET', url: '/metrics', headers: { 'x-forwarded-for': '198.51.100.7' }, token: user.token })).statusCode,
    ).toBe(403);
  });

  test("this machine's scraper, without a token, reads it", async () => {
    expect((await t.request({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
  });
});
