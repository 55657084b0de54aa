import { describe, expect, test } from 'bun:test';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '../src/config.ts';
import { VERSION } from '../src/version.ts';

describe('configuration', () => {
  test('defaults follow API-CONTRACT section 2', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      dataDir: resolve('./data'),
      adminApiKey: '',
      publicUrl: undefined,
      multiTenancy: false,
      openRegistration: true,
      ingestionRoots: [homedir()],
      rateLimitPerHour: 1000,
      rateLimitPerMinute: 100,
      corsOrigins: [],
      tunnelDomain: 'syfthub.ngrok.app',
      embedder: 'use-lite',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  test('registration is closed by default once an admin key is set', () => {
    expect(loadConfig({ SVC_ADMIN_API_KEY: 'a-long-enough-admin-key' }).openRegistration).toBe(false);
    expect(loadConfig({ SVC_ADMIN_API_KEY: 'a-long-enough-admin-key', SVC_OPEN_REGISTRATION: 'true' }).openRegistration).toBe(true);
  });

  test('SVC_PUBLIC_URL: unset keeps, empty detects, a URL is used', () => {
    expect(loadConfig({}).publicUrl).toBeUndefined();
    expect(loadConfig({ SVC_PUBLIC_URL: '' }).publicUrl).toBe('');
    expect(loadConfig({ SVC_PUBLIC_URL: 'https://me.example.com/' }).publicUrl).toBe('https://me.example.com');
  });

  test('lists are split on commas', () => {
    const config = loadConfig({ SVC_INGESTION_ROOTS: '/a, /b ,', SVC_CORS_ORIGINS: 'https://x.example.com/path,http://localhost:3000' });
    expect(config.ingestionRoots).toEqual(['/a', '/b']);
    expect(config.corsOrigins).toEqual(['https://x.example.com', 'http://localhost:3000']);
  });

  const invalid: Record<string, string> = {
    SVC_PORT: 'eighty',
    SVC_RATE_LIMIT_PER_HOUR: '-1',
    SVC_MULTI_TENANCY: 'maybe',
    SVC_PUBLIC_URL: 'ftp://x',
    SVC_CORS_ORIGINS: 'not-an-origin',
    SVC_EMBEDDER: 'word2vec',
    SVC_JWT_SECRET: 'short',
    SVC_LOG_LEVEL: 'loud',
    SVC_HOST: '  ',
  };
  for (const [name, value] of Object.entries(invalid)) {
    test(`an invalid ${name} stops start-up with a line naming it`, () => {
      expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: value })).toThrow(name);
    });
  }
});

describe('command line', () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    Bun.spawnSync([process.execPath, 'src/main.ts', ...args], { env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' });

  test('--version prints the version', () => {
    const result = run(['--version']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.toString().trim()).toBe(VERSION);
  });

  test('--help lists the commands and variables', () => {
    const result = run(['--help']);
    expect(result.exitCode).toBe(0);
    const text = result.stdout.toString();
    for (const word of ['serve', '--version', 'SVC_PORT', 'SVC_DATA_DIR', 'SVC_ADMIN_API_KEY', 'SVC_INGESTION_ROOTS'])
      expect(text).toContain(word);
  });

  test('an invalid variable exits with status 2 and one clear line', () => {
    const result = run([], { SVC_PORT: 'eighty' });
    expect(result.exitCode).toBe(2);
    expect(result.stderr.toString().trim()).toBe(
      'knode: invalid configuration: SVC_PORT: must be an integer from 0 to 65535 (got "eighty")',
    );
  });

  test('an unknown command exits with status 2', () => {
    expect(run(['frobnicate']).exitCode).toBe(2);
  });
});

describe('server', () => {
  test('serves health on the configured port and stops cleanly', async () => {
    const { startServer } = await import('../src/server.ts');
    const { tempDir } = await import('./helpers/app.ts');
    const server = await startServer(loadConfig({ SVC_DATA_DIR: tempDir(), SVC_PORT: '0', SVC_LOG_LEVEL: 'silent' }));
    try {
      const response = await fetch(`${server.url}/api/v1/health`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'ok', version: VERSION });
    } finally {
      await server.stop();
    }
  });
});
