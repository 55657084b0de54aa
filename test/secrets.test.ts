import { describe, expect, test } from 'bun:test';
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadOrCreateKey } from '../src/security/key-file.ts';
import { SecretBox } from '../src/security/secret-box.ts';
import { isSecretKey, keepMaskedSecrets, maskSecrets, openSecrets, SECRET_MASK, sealSecrets } from '../src/security/secret-config.ts';
import { createTestApp, tempDir } from './helpers/app.ts';
import { createModel } from './helpers/fixtures.ts';
import { testEngine } from './helpers/test-engine.ts';

describe('isSecretKey', () => {
  test.each([
    'api_key',
    'apiKey',
    'API_KEY',
    'accessToken',
    'access_token',
    'password',
    'client_secret',
    'secret',
    'token',
    'refresh-token',
    'tunnelToken',
    'db_password',
    'Authorization',
  ])('%s is a secret', (name) => {
    expect(isSecretKey(name)).toBe(true);
  });

  test.each([
    'cost_per_1k_prompt_tokens',
    'cost_per_1k_completion_tokens',
    'max_tokens',
    'keyword',
    'keywords',
    'model',
    'base_url',
    'timeout_ms',
    'monkey',
  ])('%s is not a secret', (name) => {
    expect(isSecretKey(name)).toBe(false);
  });
});

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  test('decrypt opens what encrypt sealed', () => {
    for (const plain of ['sk-123', '', 'ünïcødé ✓', 'x'.repeat(10_000)]) {
      const sealed = box.encrypt(plain);
      expect(SecretBox.isSealed(sealed)).toBe(true);
      expect(box.decrypt(sealed)).toBe(plain);
    }
  });

  test('the sealed text does not contain the plain text', () => {
    const sealed = box.encrypt('sk-very-visible-secret');
    expect(sealed).not.toContain('sk-very-visible-secret');
    expect(Buffer.from(sealed.slice('enc:v1:'.length), 'base64').toString('latin1')).not.toContain('sk-very-visible-secret');
  });

  test('encrypting the same text twice gives different sealed texts (fresh IV)', () => {
    expect(box.encrypt('same')).not.toBe(box.encrypt('same'));
  });

  test('a tampered ciphertext, tag or IV is detected', () => {
    const sealed = box.encrypt('tamper with me');
    const prefix = 'enc:v1:';
    const raw = Buffer.from(sealed.slice(prefix.length), 'base64');
    for (const index of [0, 12, 28, raw.length - 1]) {
      const copy = Buffer.from(raw);
      copy[index] = (copy[index] ?? 0) ^ 0x01;
      expect(() => box.decrypt(prefix + copy.toString('base64'))).toThrow();
    }
    expect(() => box.decrypt(prefix + raw.subarray(0, raw.length - 1).toString('base64'))).toThrow();
  });

  test('another key cannot open it', () => {
    const sealed = box.encrypt('mine');
    expect(() => new SecretBox(randomBytes(32)).decrypt(sealed)).toThrow();
  });

  test('refuses a value that is not sealed, and a key that is not 32 bytes', () => {
    expect(() => box.decrypt('plain text')).toThrow();
    expect(SecretBox.isSealed('plain')).toBe(false);
    expect(SecretBox.isSealed(42)).toBe(false);
    expect(() => new SecretBox(randomBytes(16))).toThrow();
  });
});

describe('secret configurations', () => {
  const box = new SecretBox(randomBytes(32));
  const config = {
    model: 'gpt-4o',
    api_key: 'sk-top',
    max_tokens: 100,
    empty_token: '',
    nested: { client_secret: 'inner-secret', region: 'eu' },
  };

  test('maskSecrets replaces secret values, nested ones too, and leaves the rest', () => {
    expect(maskSecrets(config)).toEqual({
      model: 'gpt-4o',
      api_key: SECRET_MASK,
      max_tokens: 100,
      empty_token: '',
      nested: { client_secret: SECRET_MASK, region: 'eu' },
    });
    expect(SECRET_MASK).toBe('********');
  });

  test('sealSecrets encrypts secret values and openSecrets restores them', () => {
    const sealed = sealSecrets(config, box);
    expect(JSON.stringify(sealed)).not.toContain('sk-top');
    expect(JSON.stringify(sealed)).not.toContain('inner-secret');
    expect(sealed.model).toBe('gpt-4o');
    expect(openSecrets(sealed, box)).toEqual(config);
  });

  test('keepMaskedSecrets keeps stored values for masked secrets and takes new ones', () => {
    const stored = { api_key: 'sk-stored', nested: { client_secret: 'stored-inner' } };
    expect(keepMaskedSecrets({ api_key: SECRET_MASK, nested: { client_secret: SECRET_MASK }, model: 'm' }, stored)).toEqual({
      api_key: 'sk-stored',
      nested: { client_secret: 'stored-inner' },
      model: 'm',
    });
    expect(keepMaskedSecrets({ api_key: 'sk-new' }, stored)).toEqual({ api_key: 'sk-new' });
  });
});

describe('key files in the data dir', () => {
  test('loadOrCreateKey creates a 0600 key once and reads the same key afterwards', () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'some.key');
      const first = loadOrCreateKey(path, 32);
      expect(first.length).toBe(32);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(loadOrCreateKey(path, 32).equals(first)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('loadOrCreateKey refuses a damaged key file rather than replacing it', () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'bad.key');
      writeFileSync(path, 'c2hvcnQ=\n', { mode: 0o600 });
      expect(() => loadOrCreateKey(path, 32)).toThrow();
      expect(readFileSync(path, 'utf8')).toBe('c2hvcnQ=\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // SQLite only: in cluster mode both keys come from the environment (postgres-cluster.test.ts), no key file is made.
  test.skipIf(testEngine === 'postgres')('secret.key and jwt.key are created with mode 0600 and reused after a restart', async () => {
    const dataDir = tempDir();
    try {
      const first = await createTestApp({}, dataDir);
      const user = await first.user();
      const model = await createModel(first, user, 'survives-restart', { api_key: 'sk-survives-restart' });
      const keys = ['secret.key', 'jwt.key'].map((name) => join(dataDir, name));
      for (const key of keys) expect(statSync(key).mode & 0o777).toBe(0o600);
      const before = keys.map((key) => readFileSync(key, 'utf8'));
      // A loosened mode is tightened again at the next start.
      chmodSync(keys[0] as string, 0o644);
      await first.close({ keepData: true });

      const second = await createTestApp({}, dataDir);
      try {
        expect(keys.map((key) => readFileSync(key, 'utf8'))).toEqual(before);
        for (const key of keys) expect(statSync(key).mode & 0o777).toBe(0o600);

        // A token issued before the restart still works after it.
        const me = await second.request({ method: 'GET', url: '/api/v1/auth/me', token: user.token });
        expect(me.statusCode).toBe(200);
        expect(me.json().email).toBe(user.email);

        // An encrypted api_key stored before the restart is still readable after it.
        const tenant = await second.services.database.db
          .selectFrom('tenants')
          .selectAll()
          .where('name', '=', user.tenant)
          .executeTakeFirstOrThrow();
        const opened = await second.services.models.openConfiguration(tenant, model.id);
        expect(opened.configuration.api_key).toBe('sk-survives-restart');
        const shown = await second.request({ method: 'GET', url: `/api/v1/models/${model.id}`, token: user.token });
        expect(shown.json().configuration.api_key).toBe(SECRET_MASK);
      } finally {
        await second.close({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('with SVC_JWT_SECRET set, tokens are signed with it and survive a restart with the same secret', async () => {
    const dataDir = tempDir();
    const env = { SVC_JWT_SECRET: 'j'.repeat(40) };
    try {
      const first = await createTestApp(env, dataDir);
      const user = await first.user();
      await first.close({ keepData: true });
      const second = await createTestApp(env, dataDir);
      try {
        expect((await second.request({ method: 'GET', url: '/api/v1/auth/me', token: user.token })).statusCode).toBe(200);
      } finally {
        await second.close({ keepData: true });
      }
      const third = await createTestApp({ SVC_JWT_SECRET: 'k'.repeat(40) }, dataDir);
      try {
        expect((await third.request({ method: 'GET', url: '/api/v1/auth/me', token: user.token })).statusCode).toBe(401);
      } finally {
        await third.close({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
