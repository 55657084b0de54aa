import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Tenant } from '../../src/domain/principal.ts';
import type { PasswordHashCost } from '../../src/security/passwords.ts';
import { createServices, type ServiceOptions, type Services } from '../../src/services.ts';
import { ManualClock, nearRealTime } from '../fakes/clock.ts';
import { dropEngineData, engineEnvironment } from './test-engine.ts';

export interface TestUser {
  email: string;
  password: string;
  tenant: string;
  token: string;
  headers: Record<string, string>;
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  dataDir: string;
  /** The app's time, every timestamp it stores included: it stands still near the real time (mid-minute) until the test advances it. */
  clock: ManualClock;
  /** Sends a request; `token` sets the bearer header. */
  request(options: InjectOptions & { token?: string }): Promise<LightMyRequestResponse>;
  /**
   * Registers a user with its own tenant and logs it in. Unless `grantRoots` is false, the operator then
   * grants the tenant the test's data directory, so that it may create datasets there (API-CONTRACT 3).
   */
  user(name?: string, options?: { grantRoots?: boolean }): Promise<TestUser>;
  /** A tenant's row, by its name or by a user of it, for tests that call services directly. */
  tenant(of: string | TestUser): Promise<Tenant>;
  /** The key the app signs its access tokens with: jwt.key in the data directory, or SVC_JWT_SECRET in cluster mode. */
  jwtKey(): Uint8Array;
  /** Closes the app; with `keepData` the data directory stays for a restart (and its database, on PostgreSQL). */
  close(options?: { keepData?: boolean }): Promise<void>;
}

let counter = 0;

/**
 * Argon2id at its cheapest for the test apps: OWASP's cost (knode's only one) spends about 40 ms of CPU on
 * each hash and check, and every test user needs both. Still argon2id, so what is stored looks the same.
 */
const TEST_PASSWORD_HASH_COST: PasswordHashCost = { memoryCost: 64, timeCost: 1 };

export function tempDir(prefix = 'knode-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface TestAppOptions extends Omit<ServiceOptions, 'clock'> {
  /** A clock to share with something else (a restarted app); each app has its own otherwise. */
  clock?: ManualClock;
}

/**
 * A whole knode on a fresh temporary data directory, with logging off, the general API limits off unless
 * a test sets them, outbound calls to loopback allowed to every tenant (the fakes' address), and a clock that moves only when the test advances it. `env` overrides any SVC_*
 * variable; `options` collects logs, brings a tunnel double...
 *
 * The state is in SQLite in the data directory, or with KNODE_TEST_ENGINE=postgres in a PostgreSQL database
 * of that directory's own (test-engine.ts), unless `env` names a database itself (the cluster tests).
 */
export async function createTestApp(
  env: Record<string, string> = {},
  dataDir = tempDir(),
  { clock = new ManualClock(nearRealTime()), ...options }: TestAppOptions = {},
): Promise<TestApp> {
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'silent',
    SVC_INGESTION_ROOTS: dataDir,
    SVC_RATE_LIMIT_PER_HOUR: '0',
    SVC_RATE_LIMIT_PER_MINUTE: '0',
    // The fake model servers, hubs and RPC nodes of the tests listen on 127.0.0.1, and most tenants of a test
    // are not the first owner: loopback is allowed to all of them, as an operator may. test/security/ passes
    // SVC_OUTBOUND_ALLOW: '' to test the rule itself.
    SVC_OUTBOUND_ALLOW: 'loopback',
    ...(env.SVC_DATABASE_URL === undefined ? await engineEnvironment(dataDir) : {}),
    ...env,
  });
  const services = await createServices(config, { passwordHashCost: TEST_PASSWORD_HASH_COST, ...options, clock });
  const app = await buildApp(services);
  await app.ready();

  const request = ({ token, headers, ...options }: InjectOptions & { token?: string }) =>
    app.inject({ ...options, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });

  // What the operator sends: the admin key, or nothing at all from this machine in development mode.
  const operatorHeaders: Record<string, string> = config.adminApiKey ? { authorization: `Bearer ${config.adminApiKey}` } : {};

  const user = async (name = `user${++counter}`, { grantRoots = true } = {}): Promise<TestUser> => {
    const email = `${name}@example.com`;
    const password = 'correct horse battery';
    const tenant = `${name}-tenant`;
    const adminHeaders = config.openRegistration ? {} : operatorHeaders;
    const registered = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: adminHeaders,
      payload: { email, password, tenant_name: tenant },
    });
    if (registered.statusCode !== 201) throw new Error(`register failed: ${registered.statusCode} ${registered.body}`);
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });
    if (login.statusCode !== 200) throw new Error(`login failed: ${login.statusCode} ${login.body}`);
    const token = login.json().access_token as string;
    if (grantRoots) {
      const granted = await app.inject({
        method: 'PATCH',
        url: `/api/v1/tenants/${tenant}`,
        headers: operatorHeaders,
        payload: { ingestion_roots: [dataDir] },
      });
      if (granted.statusCode !== 200) throw new Error(`granting roots failed: ${granted.statusCode} ${granted.body}`);
    }
    return { email, password, tenant, token, headers: { authorization: `Bearer ${token}` } };
  };

  const tenant = async (of: string | TestUser): Promise<Tenant> => {
    const name = typeof of === 'string' ? of : of.tenant;
    return services.database.db.selectFrom('tenants').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
  };

  return {
    app,
    services,
    dataDir,
    clock,
    request,
    user,
    tenant,
    jwtKey: () =>
      config.jwtSecret === undefined
        ? Buffer.from(readFileSync(join(dataDir, 'jwt.key'), 'utf8').trim(), 'base64')
        : new TextEncoder().encode(config.jwtSecret),
    close: async ({ keepData = false } = {}) => {
      await app.close();
      await services.close();
      if (!keepData) {
        rmSync(dataDir, { recursive: true, force: true });
        await dropEngineData(dataDir);
      }
    },
  };
}

/** Asserts the specification's 422 shape and returns the issues for closer checks. */
export function validationIssues(response: LightMyRequestResponse): { loc: (string | number)[]; msg: string; type: string }[] {
  if (response.statusCode !== 422) throw new Error(`expected 422, got ${response.statusCode}: ${response.body}`);
  const body = response.json();
  if (!Array.isArray(body.detail) || body.detail.length === 0) throw new Error(`422 without detail[]: ${response.body}`);
  for (const issue of body.detail) {
    if (!Array.isArray(issue.loc) || typeof issue.msg !== 'string' || typeof issue.type !== 'string') {
      throw new Error(`malformed 422 issue: ${JSON.stringify(issue)}`);
    }
  }
  return body.detail;
}

/** The `loc` paths of a 422, joined with dots, for compact assertions. */
export function issueLocs(response: LightMyRequestResponse): string[] {
  return validationIssues(response).map((issue) => issue.loc.join('.'));
}
