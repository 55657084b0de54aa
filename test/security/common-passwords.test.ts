import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Issue 22, item 5: passwords of eight spaces, `12345678` and `password` were accepted. Registration now
 * refuses a password that is only whitespace or one of the commonly used ones (API-CONTRACT 3), with a 422
 * on `password` that says so, and creates nothing.
 */
describe('security: registration refuses passwords anyone would guess first', () => {
  let t: TestApp;
  const register = (password: string, name: string) =>
    t.request({ method: 'POST', url: '/api/v1/auth/register', payload: { email: `${name}@example.com`, password, tenant_name: name } });

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const refused: [string, string, string][] = [
    ['eight spaces', '        ', 'whitespace'],
    ['12345678', '12345678', 'commonly used'],
    ['password (any case, spaces around)', ' PassWord ', 'commonly used'],
    ['qwertyuiop', 'qwertyuiop', 'commonly used'],
    ['iloveyou', 'iloveyou', 'commonly used'],
  ];
  refused.forEach(([name, password, says], index) => {
    test(`${name}: 422 on password, nothing created`, async () => {
      const response = await register(password, `weak${index}`);
      expect(response.statusCode).toBe(422);
      expect(response.json().detail).toEqual([
        { loc: ['body', 'password'], msg: expect.stringContaining(says), type: 'password_too_weak' },
      ]);
      const login = await t.request({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: `weak${index}@example.com`, password },
      });
      expect(login.statusCode).toBe(401);
    });
  });

  test('a passphrase of ordinary words is fine', async () => {
    expect((await register('correct horse battery staple', 'strong')).statusCode).toBe(201);
  });
});
