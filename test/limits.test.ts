import { describe, expect, test } from 'bun:test';
import { openDatabase } from '../src/db/database.ts';
import { SqliteFixedWindows } from '../src/db/fixed-windows.ts';
import { ManualClock } from './fakes/clock.ts';
import { createTestApp, tempDir } from './helpers/app.ts';

describe('general API limits', () => {
  test('the per-minute burst limit answers 429 with Retry-After once used up, per tenant', async () => {
    const t = await createTestApp({ SVC_RATE_LIMIT_PER_MINUTE: '5', SVC_RATE_LIMIT_PER_HOUR: '1000' });
    try {
      const alice = await t.user('alice');
      const bob = await t.user('bob');
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++)
        statuses.push((await t.request({ method: 'GET', url: '/api/v1/models/', token: alice.token })).statusCode);
      // /auth/login counted one request of the anonymous caller, not of the tenant: alice has her full 5.
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
      const limited = await t.request({ method: 'GET', url: '/api/v1/models/', token: alice.token });
      expect(limited.json()).toEqual({ detail: 'Rate limit exceeded' });
      // The window ends with the minute, half a minute after the app's clock started.
      expect(limited.headers['retry-after']).toBe('30');
      // Another tenant has its own budget.
      expect((await t.request({ method: 'GET', url: '/api/v1/models/', token: bob.token })).statusCode).toBe(200);
      // And the next minute, alice has hers again.
      t.clock.advance(30_000);
      expect((await t.request({ method: 'GET', url: '/api/v1/models/', token: alice.token })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  test('health is never counted', async () => {
    const t = await createTestApp({ SVC_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      for (let i = 0; i < 10; i++) expect((await t.request({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  test('anonymous requests are counted per client IP', async () => {
    const t = await createTestApp({ SVC_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const login = () =>
        t.request({
          method: 'POST',
          url: '/api/v1/auth/login',
          payload: { email: 'x@example.com', password: 'whatever' },
          remoteAddress: '10.1.1.1',
        });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await login()).statusCode);
      expect(statuses).toEqual([401, 401, 401, 429]);
      const otherIp = await t.request({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: 'x@example.com', password: 'whatever' },
        remoteAddress: '10.1.1.2',
      });
      expect(otherIp.statusCode).toBe(401);
    } finally {
      await t.close();
    }
  });

  test('the hourly limit applies too, and 0 disables a limit', async () => {
    const t = await createTestApp({ SVC_RATE_LIMIT_PER_MINUTE: '0', SVC_RATE_LIMIT_PER_HOUR: '3' });
    try {
      const user = await t.user();
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await t.request({ method: 'GET', url: '/api/v1/models/', token: user.token })).statusCode);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await t.close();
    }
  });

  test('counters survive a restart', async () => {
    const dataDir = tempDir();
    const env = { SVC_RATE_LIMIT_PER_MINUTE: '0', SVC_RATE_LIMIT_PER_HOUR: '3' };
    const first = await createTestApp(env, dataDir);
    const user = await first.user('restarter');
    for (let i = 0; i < 3; i++) await first.request({ method: 'GET', url: '/api/v1/models/', token: user.token });
    await first.close({ keepData: true });
    const second = await createTestApp(env, dataDir);
    try {
      expect((await second.request({ method: 'GET', url: '/api/v1/models/', token: user.token })).statusCode).toBe(429);
    } finally {
      await second.close();
    }
  });
});

describe('fixed windows', () => {
  test('concurrent hits never exceed the quota', async () => {
    const database = await openDatabase(tempDir());
    try {
      const windows = new SqliteFixedWindows(database, new ManualClock()); // no minute can turn over mid-burst
      const quota = { key: 'k', limit: 10, periodSeconds: 60 };
      const verdicts = await Promise.all(Array.from({ length: 50 }, () => windows.consume([quota])));
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(10);
    } finally {
      await database.close();
    }
  });

  test('a refused hit counts against no quota, and windows are aligned to the period', async () => {
    const database = await openDatabase(tempDir());
    try {
      const clock = new ManualClock(Date.UTC(2026, 0, 1, 10, 0, 30)); // 30 s into a minute
      const windows = new SqliteFixedWindows(database, clock);
      const perMinute = { key: 'm', limit: 1, periodSeconds: 60 };
      const perHour = { key: 'h', limit: 2, periodSeconds: 3600 };
      expect((await windows.consume([perHour, perMinute])).allowed).toBe(true);
      clock.advance(1000);
      const refused = await windows.consume([perHour, perMinute]);
      expect(refused).toMatchObject({ allowed: false, quota: perMinute });
      if (!refused.allowed) expect(refused.retryAfterSeconds).toBe(29);
      // The next minute window opens at 10:01:00; the hourly quota still has one hit left.
      clock.advance(29_000);
      expect((await windows.consume([perHour, perMinute])).allowed).toBe(true);
      clock.advance(60_000);
      expect(await windows.consume([perHour, perMinute])).toMatchObject({ allowed: false, quota: perHour });
    } finally {
      await database.close();
    }
  });

  test('counting while a Kysely transaction is open waits for it instead of joining it', async () => {
    const database = await openDatabase(tempDir());
    try {
      const windows = new SqliteFixedWindows(database);
      let counted = false;
      const transaction = database.db.transaction().execute(async (trx) => {
        await trx.insertInto('tenants').values({ id: 'x', name: 'in-flight', created_at: 'now' }).execute();
        // Not a wait for something: the counting below gets every chance to run inside the transaction,
        // which it must not take. Nothing can be awaited for "it did not happen".
        await Bun.sleep(30);
        expect(counted).toBe(false);
        throw new Error('roll back');
      });
      const hit = windows.consume([{ key: 'during', limit: 5, periodSeconds: 60 }]).then(() => {
        counted = true;
      });
      await expect(transaction).rejects.toThrow('roll back');
      await hit;
      const rows = await database.db.selectFrom('rate_windows').selectAll().where('key', '=', 'during').execute();
      expect(rows).toHaveLength(1);
    } finally {
      await database.close();
    }
  });
});
