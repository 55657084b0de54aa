import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SignJWT } from 'jose';
import { createTestApp, issueLocs, type TestApp } from './helpers/app.ts';
import { ADMIN_KEY, ISO_UTC } from './helpers/constants.ts';

describe('accounts', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const register = (payload: unknown) => t.request({ method: 'POST', url: '/api/v1/auth/register', payload: payload as object });

  test('register creates a user and its tenant, with the e-mail lower-cased', async () => {
    const response = await register({ email: 'Alice@Example.com', password: 'secret-pass', tenant_name: 'alice' });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toEqual({
      id: expect.any(String),
      email: 'alice@example.com',
      tenant_name: 'alice',
      created_at: expect.stringMatching(ISO_UTC),
    });
    expect(body.password).toBeUndefined();
  });

  test('register refuses an existing e-mail or tenant with 409', async () => {
    await register({ email: 'bob@example.com', password: 'secret-pass', tenant_name: 'bob' });
    const sameEmail = await register({ email: 'BOB@example.com', password: 'secret-pass', tenant_name: 'other' });
    expect(sameEmail.statusCode).toBe(409);
    expect(sameEmail.json().detail).toContain('email');
    const sameTenant = await register({ email: 'carol@example.com', password: 'secret-pass', tenant_name: 'BOB' });
    expect(sameTenant.statusCode).toBe(409);
    const defaultTenant = await register({ email: 'dave@example.com', password: 'secret-pass', tenant_name: 'default' });
    expect(defaultTenant.statusCode).toBe(409);
  });

  test('register validates e-mail, password length and tenant name', async () => {
    const response = await register({ email: 'not-an-email', password: 'short', tenant_name: '-bad name' });
    expect(issueLocs(response).sort()).toEqual(['body.email', 'body.password', 'body.tenant_name']);
    expect(issueLocs(await register({}))).toEqual(['body.email', 'body.password', 'body.tenant_name']);
    expect(issueLocs(await register({ email: 'x@example.com', password: 'p'.repeat(129), tenant_name: 'ok' }))).toEqual(['body.password']);
  });

  test('login returns a bearer JWT valid for 3600 s with the specified claims', async () => {
    await register({ email: 'erin@example.com', password: 'secret-pass', tenant_name: 'erin' });
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: 'ERIN@example.com', password: 'secret-pass' },
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.token_type).toBe('bearer');
    expect(body.expires_in).toBe(3600);
    const [header, payload] = body.access_token
      .split('.')
      .slice(0, 2)
      .map((part: string) => JSON.parse(Buffer.from(part, 'base64url').toString()));
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload.email).toBe('erin@example.com');
    expect(payload.tenant_name).toBe('erin');
    expect(payload.exp - payload.iat).toBe(3600);
    expect(typeof payload.sub).toBe('string');
  });

  test('login accepts the form-encoded username/password of OAuth2', async () => {
    await register({ email: 'frank@example.com', password: 'secret-pass', tenant_name: 'frank' });
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'username=frank%40example.com&password=secret-pass',
    });
    expect(response.statusCode).toBe(200);
  });

  test('login with a wrong password or unknown e-mail is 401 with the same message', async () => {
    await register({ email: 'gina@example.com', password: 'secret-pass', tenant_name: 'gina' });
    const wrong = await t.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: 'gina@example.com', password: 'nope-nope' },
    });
    const unknown = await t.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: 'who@example.com', password: 'nope-nope' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ detail: 'Incorrect email or password' });
    expect(unknown.json()).toEqual(wrong.json());
  });

  test('login validates its body', async () => {
    expect(issueLocs(await t.request({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'x@example.com' } }))).toEqual([
      'body.password',
    ]);
    expect(issueLocs(await t.request({ method: 'POST', url: '/api/v1/auth/login', payload: { password: 'x' } }))).toEqual(['body.email']);
  });

  test('me answers e-mail, tenant and creation time', async () => {
    const user = await t.user('henry');
    const response = await t.request({ method: 'GET', url: '/api/v1/auth/me', token: user.token });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ email: 'henry@example.com', tenant_name: 'henry-tenant', created_at: expect.any(String) });
  });

  test('me without a token is 401 Not authenticated with WWW-Authenticate', async () => {
    const response = await t.request({ method: 'GET', url: '/api/v1/auth/me' });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ detail: 'Not authenticated' });
    expect(response.headers['www-authenticate']).toBe('Bearer');
  });

  test('a forged, malformed or expired token is 401 Could not validate credentials', async () => {
    const user = await t.user();
    const [h, p] = user.token.split('.');
    const forged = `${h}.${p}.${'A'.repeat(43)}`;
    const key = t.jwtKey();
    const claims = JSON.parse(Buffer.from(p as string, 'base64url').toString());
    const expired = await new SignJWT({ email: claims.email, tenant_name: claims.tenant_name })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(key);
    for (const token of [forged, 'garbage', expired]) {
      const response = await t.request({ method: 'GET', url: '/api/v1/auth/me', token });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ detail: 'Could not validate credentials' });
    }
  });

  test('the password is stored as an argon2id hash, never in clear', async () => {
    await register({ email: 'ivy@example.com', password: 'ivy-secret-pass', tenant_name: 'ivy' });
    const row = await t.services.database.db
      .selectFrom('users')
      .selectAll()
      .where('email', '=', 'ivy@example.com')
      .executeTakeFirstOrThrow();
    expect(row.password_hash.startsWith('$argon2id$')).toBe(true);
    expect(row.password_hash).not.toContain('ivy-secret-pass');
  });
});

describe('registration and the admin key', () => {
  test('closed registration needs the admin key', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'false' });
    try {
      const payload = { email: 'jo@example.com', password: 'secret-pass', tenant_name: 'jo' };
      const anonymous = await t.request({ method: 'POST', url: '/api/v1/auth/register', payload });
      expect(anonymous.statusCode).toBe(401);
      const wrongKey = await t.request({ method: 'POST', url: '/api/v1/auth/register', payload, token: 'not-the-key' });
      expect(wrongKey.statusCode).toBe(401);
      const admin = await t.request({ method: 'POST', url: '/api/v1/auth/register', payload, token: ADMIN_KEY });
      expect(admin.statusCode).toBe(201);
    } finally {
      await t.close();
    }
  });

  test('registration is closed by default when an admin key is set, open in development mode', async () => {
    const closed = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY });
    const open = await createTestApp();
    try {
      const payload = { email: 'kim@example.com', password: 'secret-pass', tenant_name: 'kim' };
      expect((await closed.request({ method: 'POST', url: '/api/v1/auth/register', payload })).statusCode).toBe(401);
      expect((await open.request({ method: 'POST', url: '/api/v1/auth/register', payload })).statusCode).toBe(201);
    } finally {
      await closed.close();
      await open.close();
    }
  });

  test('the admin key manages the default tenant, or the one named by X-Tenant-Name', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    try {
      const user = await t.user('lee');
      const asAdmin = (headers: Record<string, string> = {}) =>
        t.request({ method: 'GET', url: '/api/v1/models/', token: ADMIN_KEY, headers });
      expect((await asAdmin()).statusCode).toBe(200);
      expect((await asAdmin({ 'x-tenant-name': user.tenant })).statusCode).toBe(200);
      const unknown = await asAdmin({ 'x-tenant-name': 'nobody' });
      expect(unknown.statusCode).toBe(404);
      // A user token is a credential, but not the admin's: settings answer 403.
      const settings = await t.request({ method: 'GET', url: '/api/v1/settings/public-url', token: user.token });
      expect(settings.statusCode).toBe(403);
      expect(settings.json()).toEqual({ detail: 'Insufficient permissions' });
      // /auth/me is about a user account: the admin key has none.
      expect((await t.request({ method: 'GET', url: '/api/v1/auth/me', token: ADMIN_KEY })).statusCode).toBe(403);
    } finally {
      await t.close();
    }
  });

  test('with multi-tenancy the admin key must name a tenant', async () => {
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_MULTI_TENANCY: 'true' });
    try {
      const response = await t.request({ method: 'GET', url: '/api/v1/models/', token: ADMIN_KEY });
      expect(issueLocs(response)).toEqual(['header.x-tenant-name']);
      const named = await t.request({
        method: 'GET',
        url: '/api/v1/models/',
        token: ADMIN_KEY,
        headers: { 'x-tenant-name': 'default' },
      });
      expect(named.statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});
