import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Logger } from 'pino';
import { ClusterWork, SINGLETON } from '../src/coordination/cluster-work.ts';
import { PostgresChangeLog } from '../src/coordination/postgres/change-log.ts';
import { PostgresLeases } from '../src/coordination/postgres/leases.ts';
import { PostgresReplicaLiveness } from '../src/coordination/replica-liveness.ts';
import { HOLDER_GONE, LeasedTunnels } from '../src/coordination/tunnel-leases.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import type { Tenant } from '../src/domain/principal.ts';
import { TUNNEL_BACKOFF, type TunnelCredential, type TunnelHooks, TunnelManager } from '../src/tunnel/manager.ts';
import type { TunnelConnection, TunnelRequest } from '../src/tunnel/provider.ts';
import { ManualClock } from './fakes/clock.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { FakeTunnelProvider } from './fakes/tunnel.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { connectMarketplace } from './helpers/hub.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * A tenant's tunnel across two replicas on one PostgreSQL (issue 26, item 4): it runs on the replica holding
 * `singleton:tunnel:<tenant>`, the one the owner last opened it through (the holder elsewhere is told
 * through the change log to let it go); GET answers the holder's state on either replica, DELETE through
 * either stops it wherever it runs, and when the holder goes, the other takes the tunnel over within the
 * lease's TTL. The two replicas share one tunnel double, which counts the tunnels connected at once.
 */

const JWT_SECRET = 'a-jwt-secret-of-at-least-32-characters';
const SECRET_KEY = Buffer.alloc(32, 9).toString('base64');
const TTL_MS = 1_500;

/** The tunnel double, also counting how many tunnels were ever connected at the same time. */
class CountingTunnelProvider extends FakeTunnelProvider {
  mostAtOnce = 0;

  override async connect(request: TunnelRequest): Promise<TunnelConnection> {
    const connection = await super.connect(request);
    this.mostAtOnce = Math.max(this.mostAtOnce, this.open);
    return connection;
  }
}

const STOPPED = { connected: false, public_url: null, has_token: false, state: 'stopped', retry_in_seconds: null, error: null };

describe('a tunnel across two replicas (the apps)', () => {
  let postgres: PrivatePostgres;
  let hub: FakeSyftHub;
  let replicaA: TestApp;
  let replicaB: TestApp;
  let aClosed = false;
  const provider = new CountingTunnelProvider();
  // One clock for both: a retry time written by one replica reads the same on the other.
  const clock = new ManualClock();

  beforeAll(async () => {
    postgres = await startPostgres();
    hub = await startFakeSyftHub();
    const env = {
      SVC_DATABASE_URL: postgres.url,
      SVC_JWT_SECRET: JWT_SECRET,
      SVC_SECRET_KEY: SECRET_KEY,
      SVC_ADMIN_API_KEY: ADMIN_KEY,
      SVC_OPEN_REGISTRATION: 'true',
      SVC_TUNNEL_DOMAIN: 'tunnels.example',
      SVC_TEST_LEASE_TTL_MS: String(TTL_MS),
    };
    replicaA = await createTestApp(env, undefined, { tunnelProvider: provider, clock });
    replicaB = await createTestApp(env, undefined, { tunnelProvider: provider, clock });
  });

  afterAll(async () => {
    if (!aClosed) await replicaA?.close();
    await replicaB?.close();
    await hub?.close();
    await postgres?.stop();
  });

  const proxy = (replica: TestApp, method: 'GET' | 'POST' | 'DELETE', tenant: string, payload?: object) =>
    replica.request({
      method,
      url: '/api/v1/settings/proxy',
      token: ADMIN_KEY,
      headers: { 'x-tenant-name': tenant },
      ...(payload ? { payload } : {}),
    });
  const runsOn = (replica: TestApp) => replica.services.tunnels.states().map((tunnel) => tunnel.state);

  test('opened through A, then B: one tunnel, on the replica opened through; GET on either says so; DELETE through A stops it on B', async () => {
    const user = await replicaA.user('owner');
    const tenant = await replicaA.tenant(user);
    const marketplace = await connectMarketplace(replicaA, user, hub, 'owner');
    const url = `https://${marketplace.username}.tunnels.example`;
    const online = { connected: true, public_url: url, has_token: true, state: 'online', retry_in_seconds: null, error: null };

    const throughA = await proxy(replicaA, 'POST', user.tenant, { tunnel_token: 'token-a' });
    expect(throughA.statusCode).toBe(200);
    expect(throughA.json()).toEqual(online);
    expect(provider.open).toBe(1);
    expect(runsOn(replicaA)).toEqual(['online']);
    expect(runsOn(replicaB)).toEqual([]);
    expect((await proxy(replicaB, 'GET', user.tenant)).json()).toEqual(online);
    // B heard that A runs it: it stands by, to take it over.
    await waitFor('B standing by', async () => replicaB.services.clusterWork.keeps(SINGLETON.tunnel(tenant.id)), 10_000);
    expect(replicaB.services.clusterWork.holds(SINGLETON.tunnel(tenant.id))).toBe(false);

    // Opened again through B: A lets it go, B takes the lease, connects and answers.
    const throughB = await proxy(replicaB, 'POST', user.tenant, { tunnel_token: 'token-b' });
    expect(throughB.statusCode).toBe(200);
    expect(throughB.json()).toEqual(online);
    expect(provider.requests.at(-1)).toMatchObject({ token: 'token-b' });
    expect(provider.open).toBe(1);
    expect(runsOn(replicaA)).toEqual([]);
    expect(runsOn(replicaB)).toEqual(['online']);
    expect((await proxy(replicaA, 'GET', user.tenant)).json()).toEqual(online);

    // B's tunnel drops: A reads B's state (reconnecting, when, why), then B's URL once B is back.
    provider.outage = 'network unreachable';
    provider.dropAll();
    await waitFor('A reading the drop', async () => (await proxy(replicaA, 'GET', user.tenant)).json().state === 'reconnecting');
    expect((await proxy(replicaA, 'GET', user.tenant)).json()).toEqual({
      connected: false,
      public_url: null,
      has_token: true,
      state: 'reconnecting',
      retry_in_seconds: TUNNEL_BACKOFF.initialMs / 1000,
      error: 'connection reset',
    });
    provider.outage = undefined;
    clock.advance(TUNNEL_BACKOFF.initialMs);
    await waitFor('A reading B back online', async () => (await proxy(replicaA, 'GET', user.tenant)).json().connected === true);
    expect((await proxy(replicaA, 'GET', user.tenant)).json()).toEqual(online);

    // Closed through A: B's tunnel stops, the token is forgotten, both say stopped.
    const closed = await proxy(replicaA, 'DELETE', user.tenant);
    expect(closed.statusCode).toBe(200);
    expect(closed.json()).toEqual(STOPPED);
    expect(provider.open).toBe(0);
    expect(runsOn(replicaB)).toEqual([]);
    expect((await proxy(replicaB, 'GET', user.tenant)).json()).toEqual(STOPPED);
    expect((await proxy(replicaA, 'GET', user.tenant)).json()).toEqual(STOPPED);
    expect(hub.domainOf(marketplace.username)).toBeNull();
    await Bun.sleep(TTL_MS); // nobody stands by for a closed tunnel
    expect(provider.open).toBe(0);
    expect(replicaA.services.clusterWork.keeps(SINGLETON.tunnel(tenant.id))).toBe(false);
    expect(replicaB.services.clusterWork.keeps(SINGLETON.tunnel(tenant.id))).toBe(false);
    expect(provider.mostAtOnce).toBe(1);
  });

  test('a refused token opened through B leaves no tunnel running anywhere, as on a single node', async () => {
    const user = await replicaA.user('refused');
    await connectMarketplace(replicaA, user, hub, 'refused');
    expect((await proxy(replicaA, 'POST', user.tenant, { tunnel_token: 'good-token' })).statusCode).toBe(200);
    provider.refused.set('bad-token', 'ERR_NGROK_105: The authtoken you specified is invalid');
    const refused = await proxy(replicaB, 'POST', user.tenant, { tunnel_token: 'bad-token' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().detail).toContain('ERR_NGROK_105');
    expect(provider.open).toBe(0);
    for (const replica of [replicaA, replicaB]) {
      expect((await proxy(replica, 'GET', user.tenant)).json()).toEqual({ ...STOPPED, has_token: true });
    }
    await proxy(replicaA, 'DELETE', user.tenant);
  });

  test('a holder that does not let the lease go within about the TTL: 503, and no tunnel starts', async () => {
    const user = await replicaA.user('stuck');
    const tenant = await replicaA.tenant(user);
    await connectMarketplace(replicaA, user, hub, 'stuck');
    // Something holds the tenant's tunnel lease and hears no change log (a replica cut off from it).
    const stuck = new PostgresLeases(replicaA.services.database.db, { holder: 'stuck', ttlMs: 60_000 });
    const held = await stuck.acquire(SINGLETON.tunnel(tenant.id));
    expect(held.acquired).toBe(true);
    try {
      const requests = provider.requests.length;
      const since = Date.now();
      const refused = await proxy(replicaA, 'POST', user.tenant, { tunnel_token: 'token-stuck' });
      expect(refused.statusCode).toBe(503);
      expect(refused.json()).toEqual({ detail: 'Another replica runs this tunnel and did not let it go in time: try again' });
      expect(Date.now() - since).toBeGreaterThanOrEqual(TTL_MS);
      expect(provider.requests.length).toBe(requests);
      expect((await proxy(replicaB, 'GET', user.tenant)).json()).toEqual(STOPPED);
    } finally {
      await stuck.close();
    }
    expect((await proxy(replicaA, 'POST', user.tenant, { tunnel_token: 'token-stuck' })).statusCode).toBe(200);
    expect((await proxy(replicaB, 'DELETE', user.tenant)).statusCode).toBe(200);
    expect(provider.open).toBe(0);
  });

  test('A closing while it runs the tunnel: B takes it over within the TTL', async () => {
    const user = await replicaA.user('handover');
    const tenant = await replicaA.tenant(user);
    const marketplace = await connectMarketplace(replicaA, user, hub, 'handover');
    expect((await proxy(replicaA, 'POST', user.tenant, { tunnel_token: 'token-handover' })).statusCode).toBe(200);
    await waitFor('B standing by', async () => replicaB.services.clusterWork.keeps(SINGLETON.tunnel(tenant.id)), 10_000);
    const since = Date.now();
    aClosed = true;
    await replicaA.close();
    await waitFor('B taking the tunnel over', async () => runsOn(replicaB)[0] === 'online', 10_000);
    expect(Date.now() - since).toBeLessThan(TTL_MS + 1_000);
    expect(provider.requests.at(-1)).toMatchObject({ token: 'token-handover', domain: `${marketplace.username}.tunnels.example` });
    expect((await proxy(replicaB, 'GET', user.tenant)).json().connected).toBe(true);
    expect(provider.open).toBe(1);
    expect(provider.mostAtOnce).toBe(1);
  });
});

describe('a tunnel across two replicas (their managers): a holder that dies', () => {
  let postgres: PrivatePostgres;
  const pools: OpenedPostgres[] = [];
  const tenant: Tenant = { id: '0c4f9d7e-0000-4000-8000-00000000aaaa', name: 'owner', created_at: new Date().toISOString() };

  beforeAll(async () => {
    postgres = await startPostgres();
    pools.push(await openPostgresDatabase(postgres.url), await openPostgresDatabase(postgres.url));
    await (pools[0] as OpenedPostgres).db
      .insertInto('tenants')
      .values({ id: tenant.id, name: tenant.name, created_at: tenant.created_at })
      .execute();
  });

  afterAll(async () => {
    for (const pool of pools) await pool.close();
    await postgres?.stop();
  });

  const quiet = { warn: () => undefined, info: () => undefined } as unknown as Logger;
  /** The stored credential, as the database would keep it for both replicas. */
  let stored: TunnelCredential | null = null;
  const hooks: TunnelHooks = {
    saveToken: async (_tenant, credential) => {
      stored = credential;
    },
    storedTokens: async () => (stored ? [{ tenant, credential: stored }] : []),
    storedToken: async () => (stored ? { tenant, credential: stored } : undefined),
    hasToken: async () => stored !== null,
    domainFor: async () => 'owner.tunnels.example',
    marketplaceCredential: async () => {
      throw new Error('not used');
    },
    publish: async () => undefined,
  };

  /**
   * A replica: its leases (on `leaseClock`: a ManualClock never moved renews nothing, as a dead process), change
   * log, liveness and tunnel manager (on `tunnelClock`: never moved, a dead process never reconnects).
   */
  const replica = async (holder: string, pool: OpenedPostgres, provider: FakeTunnelProvider, leaseClock?: ManualClock) => {
    const leases = new PostgresLeases(pool.db, { holder, ttlMs: TTL_MS, ...(leaseClock ? { clock: leaseClock } : {}) });
    const changes = new PostgresChangeLog(pool.db, { url: postgres.url, pollEveryMs: 200 });
    await changes.start();
    const work = new ClusterWork(leases, quiet);
    const coordination = { leases, changes, liveness: new PostgresReplicaLiveness(pool.db, holder), shared: true };
    const replicas = new LeasedTunnels({ db: pool.db, work, coordination, log: quiet, leaseTtlMs: TTL_MS });
    const tunnels = new TunnelManager(provider, hooks, quiet, TUNNEL_BACKOFF, 8080, new ManualClock(), replicas);
    await leases.acquire(`replica:${holder}`); // alive, as keepReplicaAlive holds it
    return {
      tunnels,
      close: async () => {
        await tunnels.shutdown();
        await work.close();
        await changes.stop();
        await leases.close();
      },
    };
  };

  test('its lease lapses and the replica standing by takes the tunnel over within about the TTL', async () => {
    const [poolA, poolB] = pools as [OpenedPostgres, OpenedPostgres];
    const provider = new CountingTunnelProvider();
    const a = await replica('a', poolA, provider, new ManualClock());
    const b = await replica('b', poolB, provider);
    try {
      expect((await a.tunnels.open(tenant, 'token-owner')).state).toBe('online');
      expect(await b.tunnels.status(tenant)).toMatchObject({ state: 'online', public_url: 'https://owner.tunnels.example' });
      // A dies: its tunnel ends at the provider, and its leases are renewed no more.
      const since = Date.now();
      provider.dropAll('the agent died');
      await waitFor('B taking the tunnel over', async () => b.tunnels.states()[0]?.state === 'online', 10_000);
      expect(Date.now() - since).toBeLessThan(TTL_MS + 1_000);
      expect(await b.tunnels.status(tenant)).toMatchObject({ state: 'online', connected: true });
      expect(provider.requests.at(-1)).toMatchObject({ token: 'token-owner', domain: 'owner.tunnels.example' });
      expect(provider.open).toBe(1);
      expect(provider.mostAtOnce).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('GET on another replica says the holder is gone once its lease lapsed, until a replica takes the tunnel over', async () => {
    const [poolA, poolB] = pools as [OpenedPostgres, OpenedPostgres];
    const provider = new CountingTunnelProvider();
    const a = await replica('a2', poolA, provider, new ManualClock());
    await a.tunnels.open(tenant, 'token-owner');
    // Started after A opened it, B never heard of it: it does not stand by (a restart would).
    const b = await replica('b2', poolB, provider);
    try {
      expect(await b.tunnels.status(tenant)).toMatchObject({ state: 'online', public_url: 'https://owner.tunnels.example' });
      provider.dropAll('the agent died');
      // A's last word, shared before it died: reconnecting, and why.
      await waitFor('B reading the drop', async () => (await b.tunnels.status(tenant)).error === 'the agent died');
      await waitFor('B seeing A gone', async () => (await b.tunnels.status(tenant)).error === HOLDER_GONE, 10_000);
      expect(await b.tunnels.status(tenant)).toEqual({
        connected: false,
        public_url: null,
        has_token: true,
        state: 'reconnecting',
        retry_in_seconds: null,
        error: HOLDER_GONE,
      });
      await b.tunnels.start(8080);
      await waitFor('B taking the tunnel over', async () => (await b.tunnels.status(tenant)).connected, 10_000);
      expect(provider.mostAtOnce).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
