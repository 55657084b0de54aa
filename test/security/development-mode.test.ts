import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Issue 11, item 5: development mode (no admin key) needs no credentials, so it must trust only requests
 * made directly on this machine, and a web page in the owner's browser must not be able to use it.
 */
describe('security: development mode is reachable only from this machine', () => {
  let t: TestApp;
  const register = { email: 'mallory@example.com', password: 'a long password', tenant_name: 'mallory' };
  // What the tunnel delivers: a loopback peer, the public host, and the address it forwards for.
  const throughTunnel = { host: 'owner.syfthub.ngrok.app', 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https' };

  beforeAll(async () => {
    t = await createTestApp();
    const owner = await t.user('owner');
    // The tunnel's URL is the public URL; its host is allowed, but what arrives through it is remote.
    const url = await t.request({
      method: 'PATCH',
      url: '/api/v1/settings/public-url',
      token: owner.token,
      payload: { public_url: 'https://owner.syfthub.ngrok.app' },
    });
    expect(url.statusCode).toBe(200);
  });
  afterAll(async () => {
    await t.close();
  });

  test('a cross-site HTML form cannot register an account (415)', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      payload: new URLSearchParams(register).toString(),
    });
    expect(response.statusCode).toBe(415);
  });

  test('a cross-site HTML form cannot reach /settings/proxy (415), nor a text/plain one', async () => {
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=b']) {
      const response = await t.request({
        method: 'POST',
        url: '/api/v1/settings/proxy',
        headers: { 'content-type': type, origin: 'https://evil.example' },
        payload: 'tunnel_token=abc',
      });
      expect(response.statusCode).toBe(415);
    }
  });

  test('a script on another site cannot post JSON either: its Origin is refused (403)', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      payload: register,
    });
    expect(response.statusCode).toBe(403);
    expect((await t.request({ method: 'GET', url: '/api/v1/auth/me', headers: { origin: 'https://evil.example' } })).statusCode).toBe(401);
  });

  test("the server's own origin (its console) is trusted like a local tool", async () => {
    const response = await t.request({
      method: 'PATCH',
      url: '/api/v1/settings/public-url',
      headers: { 'content-type': 'application/json', origin: 'http://localhost:80' },
      payload: { public_url: 'https://default.example.org' },
    });
    expect(response.statusCode).toBe(200);
  });

  test('a DNS-rebinding Host is refused (421) before anything else', async () => {
    for (const host of ['evil.example:8080', 'evil.example', '192.168.1.5:8080']) {
      const response = await t.request({ method: 'GET', url: '/api/v1/settings/public-url', headers: { host } });
      expect(response.statusCode).toBe(421);
    }
    expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url', headers: { host: '127.0.0.1:8080' } })).statusCode).toBe(
      200,
    );
    expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url', headers: { host: '[::1]:8080' } })).statusCode).toBe(200);
  });

  test('a request through the tunnel gets no credential-free access to settings (401)', async () => {
    for (const url of ['/api/v1/settings/proxy', '/api/v1/settings/public-url']) {
      const response = await t.request({ method: 'GET', url, headers: throughTunnel });
      expect(response.statusCode).toBe(401);
    }
    const post = await t.request({ method: 'POST', url: '/api/v1/settings/proxy', headers: throughTunnel, payload: { tunnel_token: 'x' } });
    expect(post.statusCode).toBe(401);
  });

  test('a request through the tunnel cannot register (403), while one from this machine can', async () => {
    const remote = await t.request({ method: 'POST', url: '/api/v1/auth/register', headers: throughTunnel, payload: register });
    expect(remote.statusCode).toBe(403);
    const local = await t.request({ method: 'POST', url: '/api/v1/auth/register', payload: register });
    expect(local.statusCode).toBe(201);
  });

  test('a loopback Host is not enough: a forwarding header makes the request remote', async () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-forwarded-host', 'x-real-ip']) {
      const response = await t.request({ method: 'GET', url: '/api/v1/settings/proxy', headers: { [header]: 'for=203.0.113.1' } });
      expect(response.statusCode).toBe(401);
    }
  });

  test('a request from another machine needs credentials, even to the address knode listens on', async () => {
    const lan = await createTestApp({ SVC_HOST: '192.168.1.5' });
    try {
      const fromLan = { remoteAddress: '192.168.1.20', headers: { host: '192.168.1.5:8080' } };
      expect((await lan.app.inject({ method: 'GET', url: '/api/v1/settings/public-url', ...fromLan })).statusCode).toBe(401);
      const registration = await lan.app.inject({ method: 'POST', url: '/api/v1/auth/register', ...fromLan, payload: register });
      expect(registration.statusCode).toBe(403);
    } finally {
      await lan.close();
    }
  });

  test('/auth/login still takes the form OAuth2 password clients send', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ username: 'owner@example.com', password: 'correct horse battery' }).toString(),
    });
    expect(response.statusCode).toBe(200);
  });
});
