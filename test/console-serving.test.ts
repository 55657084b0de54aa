import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { CONSOLE_PAGES } from '../src/console/routes.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

/** What the console needs to be served: its pages and files, compressed and cached; the API untouched. */
describe('the console is served at /', () => {
  let t: TestApp;
  let script: string;
  let style: string;

  beforeAll(async () => {
    t = await createTestApp();
    const page = await t.request({ method: 'GET', url: '/' });
    script = /<script type="module" src="\/console\/([^"]+\.js)">/.exec(page.body)?.[1] ?? '';
    style = /<link rel="stylesheet" href="\/console\/([^"]+\.css)">/.exec(page.body)?.[1] ?? '';
  });

  afterAll(async () => {
    await t.close();
  });

  test('/ and every page of the console answer its index.html, which only loads its own files', async () => {
    for (const url of ['/', '/login', '/setup', '/datasets', '/datasets/new', '/models/abc', '/endpoints/my-papers/policies']) {
      const response = await t.request({ method: 'GET', url });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-cache');
      expect(response.headers['content-security-policy']).toContain("script-src 'self'");
      expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(response.body).toContain('<div id="app"></div>');
    }
    expect(script).toMatch(/^main-[a-z0-9]+\.js$/);
    expect(style).toMatch(/^main-[a-z0-9]+\.css$/);
    expect(CONSOLE_PAGES).not.toContain('/policies');
  });

  test('its files are compressed as the browser accepts and kept forever (their names change with them)', async () => {
    const plain = await t.request({ method: 'GET', url: `/console/${script}`, headers: { 'accept-encoding': 'identity' } });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const brotli = await t.request({ method: 'GET', url: `/console/${script}`, headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(brotli.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(brotli.rawPayload).toString()).toBe(plain.body);
    const gzip = await t.request({ method: 'GET', url: `/console/${style}`, headers: { 'accept-encoding': 'gzip' } });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.rawPayload).toString()).toContain(':root');
    // The initial load stays small: the issue allows 250 kB of compressed JavaScript.
    expect(brotli.rawPayload.byteLength).toBeLessThan(250_000);
    const again = await t.request({ method: 'GET', url: `/console/${script}`, headers: { 'if-none-match': String(plain.headers.etag) } });
    expect(again.statusCode).toBe(304);
  });

  test('an unknown file or page is a 404; the API, /docs and /policies/ answer as before', async () => {
    expect((await t.request({ method: 'GET', url: '/console/nope.js' })).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: '/console/../package.json' })).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: '/elsewhere' })).json()).toEqual({ detail: 'No route GET /elsewhere' });
    expect((await t.request({ method: 'GET', url: '/api/v1/health' })).json().status).toBe('ok');
    expect((await t.request({ method: 'GET', url: '/api/v1/nope' })).statusCode).toBe(404);
    const docs = await t.request({ method: 'GET', url: '/docs/json' });
    expect(docs.json().openapi).toStartWith('3.');
    // The console's own routes are not in the API's document; the API's new ones are.
    const paths = Object.keys(docs.json().paths);
    expect(paths).not.toContain('/');
    expect(paths).toEqual(expect.arrayContaining(['/api/v1/types', '/api/v1/folders', '/api/v1/models/discover']));
    expect((await t.request({ method: 'GET', url: '/policies/' })).statusCode).toBe(401);
  });

  test('pages are not counted against the general API limits', async () => {
    const limited = await createTestApp({ SVC_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      for (let i = 0; i < 5; i++) expect((await limited.request({ method: 'GET', url: '/datasets' })).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
