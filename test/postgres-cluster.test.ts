import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createTestApp, type TestApp, tempDir } from './helpers/app.ts';
import { createDataset, createModel } from './helpers/fixtures.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * Cluster mode (issue 26, item 1): with SVC_DATABASE_URL every replica keeps its state in one PostgreSQL,
 * with the keys from the environment, so that whatever one replica wrote (a user, a token, a sealed
 * secret, a rate window) another reads. Without the variable, SQLite as before.
 */

const JWT_SECRET = 'a-jwt-secret-of-at-least-32-characters';
const SECRET_KEY = Buffer.alloc(32, 9).toString('base64');
const PROJECT_ROOT = join(import.meta.dir, '..');

const configError = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('the configuration was accepted');
};

describe('SVC_DATABASE_URL and the keys of cluster mode', () => {
  test('without it, SQLite as before: no URL, no key from the environment', () => {
    const config = loadConfig({});
    expect(config.databaseUrl).toBeUndefined();
    expect(config.secretKey).toBeUndefined();
  });

  test('a postgres:// or postgresql:// URL with both keys is cluster mode', () => {
    for (const url of ['postgres://knode:pw@db.example.org:5432/knode', 'postgresql://knode@10.0.0.5/knode?sslmode=require']) {
      const config = loadConfig({ SVC_DATABASE_URL: url, SVC_JWT_SECRET: JWT_SECRET, SVC_SECRET_KEY: SECRET_KEY });
      expect(config.databaseUrl).toBe(url);
      expect(config.secretKey).toEqual(Buffer.alloc(32, 9));
      expect(config.jwtSecret).toBe(JWT_SECRET);
    }
  });

  test('any other URL stops start-up with one line that does not repeat it (it may hold a password)', () => {
    const keys = { SVC_JWT_SECRET: JWT_SECRET, SVC_SECRET_KEY: SECRET_KEY };
    expect(configError({ SVC_DATABASE_URL: 'mysql://root:hunter2@db/knode', ...keys })).toBe(
      'SVC_DATABASE_URL: must be a postgres:// or postgresql:// URL (got a mysql:// URL)',
    );
    expect(configError({ SVC_DATABASE_URL: 'sqlite:./knode.db', ...keys })).toBe(
      'SVC_DATABASE_URL: must be a postgres:// or postgresql:// URL (got a sqlite:// URL)',
    );
    expect(configError({ SVC_DATABASE_URL: 'hunter2@db:5432', ...keys })).toBe(
      'SVC_DATABASE_URL: must be a postgres:// or postgresql:// URL (got a value that is not a URL)',
    );
  });

  test('cluster mode needs both keys from the environment, and a secret key of 32 bytes', () => {
    const url = 'postgres://knode@db/knode';
    expect(configError({ SVC_DATABASE_URL: url, SVC_SECRET_KEY: SECRET_KEY })).toStartWith('SVC_JWT_SECRET: must be set in cluster mode');
    expect(configError({ SVC_DATABASE_URL: url, SVC_JWT_SECRET: JWT_SECRET })).toStartWith('SVC_SECRET_KEY: must be set in cluster mode');
    const short = Buffer.alloc(16, 1).toString('base64');
    expect(configError({ SVC_DATABASE_URL: url, SVC_JWT_SECRET: JWT_SECRET, SVC_SECRET_KEY: short })).toBe(
      'SVC_SECRET_KEY: must be 32 bytes in base64 (openssl rand -base64 32); got 16 bytes',
    );
    expect(configError({ SVC_DATABASE_URL: url, SVC_JWT_SECRET: JWT_SECRET, SVC_SECRET_KEY: 'not base64!' })).toStartWith(
      'SVC_SECRET_KEY: must be 32 bytes in base64',
    );
  });

  test('SVC_SECRET_KEY without SVC_DATABASE_URL is refused rather than ignored', () => {
    expect(configError({ SVC_SECRET_KEY: SECRET_KEY })).toBe(
      'SVC_SECRET_KEY: only read in cluster mode (with SVC_DATABASE_URL); SQLite keeps its key in the data folder',
    );
  });

  test('an unreachable PostgreSQL stops start-up with one line naming it, without its password', async () => {
    const child = Bun.spawn(['./node_modules/.bin/bun', 'src/main.ts'], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        SVC_HOST: '127.0.0.1',
        SVC_PORT: '0',
        SVC_DATA_DIR: tempDir(),
        SVC_LOG_LEVEL: 'silent',
        SVC_DATABASE_URL: 'postgres://knode:hunter2@127.0.0.1:1/knode',
        SVC_JWT_SECRET: JWT_SECRET,
        SVC_SECRET_KEY: SECRET_KEY,
      },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    expect(code).toBe(1);
    const lines = stderr.split('\n').filter((line) => line.startsWith('knode:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith('knode: PostgreSQL at knode@127.0.0.1:1/knode cannot be reached: ');
    expect(stderr).not.toContain('hunter2');
    expect(stderr).not.toContain('    at ');
  });
});

describe('two replicas on one PostgreSQL', () => {
  let postgres: PrivatePostgres;
  let replicaA: TestApp;
  let replicaB: TestApp;

  beforeAll(async () => {
    postgres = await startPostgres();
    const env = {
      SVC_DATABASE_URL: postgres.url,
      SVC_JWT_SECRET: JWT_SECRET,
      SVC_SECRET_KEY: SECRET_KEY,
      SVC_RATE_LIMIT_PER_MINUTE: '30',
    };
    // Each with its own data folder, as on two machines: only the database is shared.
    replicaA = await createTestApp(env);
    replicaB = await createTestApp(env);
  });

  afterAll(async () => {
    await replicaA?.close();
    await replicaB?.close();
    await postgres?.stop();
  });

  test('the data folder holds no database and no key: the state is in PostgreSQL', () => {
    for (const replica of [replicaA, replicaB]) {
      expect(existsSync(join(replica.dataDir, 'knode.db'))).toBe(false);
      expect(existsSync(join(replica.dataDir, 'secret.key'))).toBe(false);
      expect(existsSync(join(replica.dataDir, 'jwt.key'))).toBe(false);
    }
  });

  test('a user registered on one replica logs in on the other, and a token of one works on the other', async () => {
    const user = await replicaA.user('traveller');
    const me = await replicaB.request({ method: 'GET', url: '/api/v1/auth/me', token: user.token });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ email: user.email });
    const login = await replicaB.request({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: user.email, password: user.password },
    });
    expect(login.statusCode).toBe(200);
  });

  test('a secret sealed by one replica is opened by the other', async () => {
    const user = await replicaA.user('sealer');
    const model = await createModel(replicaA, user, 'remote', { api_key: 'sk-sealed-on-a' });
    const opened = await replicaB.services.models.openConfiguration(await replicaB.tenant(user), model.id);
    expect(opened.configuration).toMatchObject({ api_key: 'sk-sealed-on-a' });
  });

  test('50 requests at once across both replicas against a limit of 30 a minute: exactly 30 pass', async () => {
    const user = await replicaA.user('busy');
    // The general limits count per tenant and minute: a new minute on both replicas' clocks (they stand at
    // the same moment), so that signing up counts against none of it.
    for (const replica of [replicaA, replicaB]) replica.clock.advance(60_000);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 === 0 ? replicaA : replicaB).request({ method: 'GET', url: '/api/v1/endpoints/', token: user.token }),
      ),
    );
    const statuses = answers.map((answer) => answer.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(30);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
  });

  test('a folder indexed by one replica is searched by keyword through the other; vectors need pgvector, and say so', async () => {
    const user = await replicaA.user('reader');
    const dataset = await createDataset(replicaA, user, 'handbook');
    const folder = dataset.configuration.ingestionPath as string;
    writeFileSync(join(folder, 'tides.md'), '# Tides\n\nThe moon pulls the oceans: spring tides come twice a month.\n');
    writeFileSync(join(folder, 'bread.md'), '# Bread\n\nSourdough rises slowly with wild yeast and flour.\n');
    const search = (replica: TestApp, mode: string) =>
      replica.request({
        method: 'POST',
        url: `/api/v1/datasets/${dataset.id}/search`,
        token: user.token,
        payload: { query: 'sourdough yeast', mode },
      });
    const found = await waitFor('the files searchable by keyword', async () => {
      const answer = await search(replicaB, 'keyword');
      const documents = answer.statusCode === 200 ? (answer.json().documents as { content: string }[]) : [];
      return documents.length > 0 && documents;
    });
    expect(found[0]?.content).toContain('Sourdough');
    if (replicaA.services.searchEngine.vectorsMissing === undefined) return; // a server with pgvector: vectors are searched too
    const vector = await search(replicaB, 'vector');
    expect(vector.statusCode).toBe(503);
    expect(vector.json().detail).toContain('pgvector');
    // The dataset view and the provisioners say so before anyone searches.
    const view = await replicaB.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: user.token });
    expect(view.json().search.vectors_missing).toContain('pgvector');
    const provisioners = await replicaB.request({ method: 'GET', url: '/api/v1/datasets/provisioners/', token: user.token });
    expect(provisioners.json()[0].details).toMatchObject({
      vector_store: 'pgvector',
      vector_store_version: 'none',
      keyword_index: 'PostgreSQL BM25',
    });
  });
});
