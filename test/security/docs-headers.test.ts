import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Issue 22, item 5: `/docs` (swagger-ui) had no Content-Security-Policy and no framing headers, so another
 * site could frame the API page (clickjacking) or a script injected into it could load anything. Its pages
 * now run only their own files, load nothing from elsewhere, and may not be framed.
 */
describe('security: the API documentation page cannot be framed and runs only its own files', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  test('every /docs answer carries a strict CSP and the framing headers', async () => {
    for (const url of ['/docs', '/docs/', '/docs/json', '/docs/static/swagger-ui.css']) {
      const response = await t.request({ method: 'GET', url });
      expect(response.statusCode).toBe(200);
      const csp = response.headers['content-security-policy'] as string;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("object-src 'none'");
      expect(csp).not.toContain('https:');
      expect(csp).not.toContain("frame-ancestors 'self'");
      expect(csp).not.toContain('validator.swagger.io');
      expect(response.headers['x-frame-options']).toBe('DENY');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['referrer-policy']).toBe('no-referrer');
    }
  });
});
