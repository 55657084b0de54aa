import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { HEARTBEAT_INTERVAL_MS } from '../src/publishing/heartbeat.ts';
import { deadServerUrl, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, type HealthReport, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { ADMIN_KEY, ISO_UTC } from './helpers/constants.ts';
import { Dataset } from './helpers/datasets.ts';
import { createEndpoint, createModel } from './helpers/fixtures.ts';
import { connectMarketplace, logCollector } from './helpers/hub.ts';
import { waitFor } from './helpers/wait.ts';

/** Moves the app's clock to its next heartbeat, once the last one has ended (the next is timed from its end). */
async function nextHeartbeat(t: TestApp): Promise<void> {
  await waitFor('the next heartbeat to be scheduled', async () => t.clock.waiting.includes(HEARTBEAT_INTERVAL_MS));
  t.clock.advance(HEARTBEAT_INTERVAL_MS);
}

describe('health heartbeat', () => {
  let t: TestApp;
  let hub: FakeSyftHub;
  let openai: FakeOpenAIServer;
  let owner: TestUser;
  let marketId: string;

  beforeAll(async () => {
    hub = await startFakeSyftHub();
    openai = startFakeOpenAI();
    t = await createTestApp();
    owner = await t.user('beating');
    marketId = (await connectMarketplace(t, owner, hub, 'beating')).id;
    const dataset = await Dataset.create(t, owner);
    await dataset.until('running', (view) => view.status === 'running');
    const model = await createModel(t, owner, 'alive', { base_url: openai.url, model: 'fake-model' });
    const dead = await createModel(t, owner, 'dead', { base_url: await deadServerUrl(), model: 'gone', timeout_ms: 2000 });
    await createEndpoint(t, owner, { slug: 'hb-data', dataset_id: dataset.id, response_type: 'raw' });
    await createEndpoint(t, owner, { slug: 'hb-model', model_id: model.id, response_type: 'summary' });
    await createEndpoint(t, owner, { slug: 'hb-both-dead', dataset_id: dataset.id, model_id: dead.id });
    await createEndpoint(t, owner, { slug: 'hb-quiet', model_id: model.id, response_type: 'summary' }); // never published
    for (const slug of ['hb-data', 'hb-model', 'hb-both-dead']) {
      const response = await t.request({
        method: 'POST',
        url: `/api/v1/endpoints/${slug}/publish`,
        token: owner.token,
        payload: { marketplace_ids: [marketId] },
      });
      expect(response.json().results[0].success).toBe(true);
    }
  });

  afterAll(async () => {
    await t.close();
    await hub.close();
    await openai.close();
  });

  test('nothing is reported while the tenant has no public URL', async () => {
    await t.services.publishingTasks.beat();
    expect(hub.healthReports).toEqual([]);
  });

  test('reports every published endpoint with its health, the TTL and the public URL', async () => {
    const patched = await t.request({
      method: 'PATCH',
      url: '/api/v1/settings/public-url',
      token: owner.token,
      payload: { public_url: 'https://beating.example.net' },
    });
    expect(patched.statusCode).toBe(200);
    await nextHeartbeat(t);
    const report = await waitFor('a heartbeat', async () => hub.healthReports[0]);
    expect(report.body.endpoints).toHaveLength(3);
    expect(report.username).toBe('beating');
    expect(Object.keys(report.body).sort()).toEqual(['endpoints', 'ttl_seconds', 'url']);
    expect(report.body.ttl_seconds).toBe(90);
    expect(report.body.url).toBe('https://beating.example.net');
    const bySlug = Object.fromEntries(report.body.endpoints.map((entry) => [entry.slug, entry]));
    expect(bySlug['hb-data']).toEqual({ slug: 'hb-data', status: 'healthy', checked_at: expect.stringMatching(ISO_UTC) });
    expect(bySlug['hb-model']?.status).toBe('healthy');
    expect(bySlug['hb-both-dead']?.status).toBe('unhealthy');
    for (const entry of report.body.endpoints) expect(Object.keys(entry).sort()).toEqual(['checked_at', 'slug', 'status']);
  });

  test('an endpoint that is unpublished is no longer reported', async () => {
    await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/hb-model/unpublish',
      token: owner.token,
      payload: { unpublish_from_all: true },
    });
    const seen = hub.healthReports.length;
    await nextHeartbeat(t);
    const report = await waitFor('a later heartbeat', async (): Promise<HealthReport | undefined> => hub.healthReports[seen]);
    expect(report.body.endpoints.map((entry) => entry.slug).sort()).toEqual(['hb-both-dead', 'hb-data']);
  });

  test("a marketplace's status: its session, its last heartbeat and what is published there", async () => {
    const status = async (token = owner.token, id = marketId) =>
      t.request({ method: 'GET', url: `/api/v1/marketplaces/${id}/status`, token });
    const ok = await status();
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({
      marketplace_id: marketId,
      logged_in: true,
      last_heartbeat: { at: expect.stringMatching(ISO_UTC), ok: true, error: null },
      published_endpoints: ['hb-both-dead', 'hb-data'],
      satellite_id: null, // this hub (2026-07) has no satellite registry
    });
    // The hub stops taking reports: the next beat says why.
    hub.failWith(503);
    try {
      await nextHeartbeat(t);
      const failing = await waitFor('a refused heartbeat', async () => {
        const body = (await status()).json();
        return body.last_heartbeat?.ok === false ? body : undefined;
      });
      expect(failing.last_heartbeat.error).toContain('503');
    } finally {
      hub.failWith(undefined);
    }
    const stranger = await t.user('not-beating');
    expect((await status(stranger.token)).statusCode).toBe(404);
    expect((await status(owner.token, crypto.randomUUID())).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: `/api/v1/marketplaces/${marketId}/status` })).statusCode).toBe(401);
    expect((await status('not-a-token')).statusCode).toBe(401);
    expect((await status(owner.token, 'not-a-uuid')).statusCode).toBe(422);
  });

  test('the heartbeat stops on shutdown', async () => {
    const app = await createTestApp();
    await nextHeartbeat(app);
    await app.close(); // waits for the beat in progress
    expect(app.clock.waiting).toEqual([]); // and no timer outlives the services
  });
});

describe('start-up', () => {
  let hub: FakeSyftHub;
  beforeAll(async () => {
    hub = await startFakeSyftHub();
  });
  afterAll(() => hub.close());

  test('every published endpoint is synced again at start-up, in the background', async () => {
    const dataDir = tempDir();
    try {
      const first = await createTestApp({}, dataDir);
      const owner = await first.user('restarting');
      const market = await connectMarketplace(first, owner, hub, 'restarting');
      const model = await createModel(first, owner, 'm');
      await createEndpoint(first, owner, { slug: 'survivor', model_id: model.id, response_type: 'summary' });
      await first.request({
        method: 'POST',
        url: '/api/v1/endpoints/survivor/publish',
        token: owner.token,
        payload: { marketplace_ids: [market.id] },
      });
      await first.close({ keepData: true });

      hub.endpointsOf('restarting').clear();
      const second = await createTestApp({}, dataDir);
      try {
        await waitFor('the start-up sync', async () => hub.endpointsOf('restarting').has('survivor'));
        const sync = hub.requests.filter((request) => request.path === '/api/v1/endpoints/sync').at(-1);
        expect(sync?.username).toBe('restarting');
      } finally {
        await second.close({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('SVC_PUBLIC_URL becomes the default tenant’s public URL and is pushed to its default marketplace', async () => {
    const dataDir = tempDir();
    const env = { SVC_ADMIN_API_KEY: ADMIN_KEY };
    try {
      const first = await createTestApp(env, dataDir);
      hub.addUser({ username: 'operator', email: 'operator@hub.example', password: 'operator-password' });
      // The admin key without X-Tenant-Name acts in the `default` tenant.
      const created = await first.request({
        method: 'POST',
        url: '/api/v1/marketplaces/',
        token: ADMIN_KEY,
        payload: { name: 'hub', url: hub.url, username: 'operator', password: 'operator-password' },
      });
      expect(created.statusCode).toBe(201);
      await first.close({ keepData: true });

      const second = await createTestApp({ ...env, SVC_PUBLIC_URL: 'https://operator.example.org/' }, dataDir);
      try {
        await waitFor('the public URL at the hub', async () => hub.domainOf('operator') === 'https://operator.example.org');
        const stored = await second.request({ method: 'GET', url: '/api/v1/settings/public-url', token: ADMIN_KEY });
        expect(stored.json()).toEqual({ public_url: 'https://operator.example.org', source: 'configured' });
      } finally {
        await second.close({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('an empty SVC_PUBLIC_URL detects the public IP (SVC_PUBLIC_IP_URL)', async () => {
    const ipService = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('203.0.113.9\n') });
    const t = await createTestApp({ SVC_PUBLIC_URL: '', SVC_PUBLIC_IP_URL: `http://127.0.0.1:${ipService.port}/`, SVC_PORT: '8181' });
    try {
      const stored = await waitFor('the detected URL', async () => {
        const url = (await t.request({ method: 'GET', url: '/api/v1/settings/public-url' })).json().public_url;
        return url ?? undefined;
      });
      expect(stored).toBe('http://203.0.113.9:8181');
      expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url' })).json().source).toBe('detected');
    } finally {
      await t.close();
      await ipService.stop(true);
    }
  });

  test('a failed detection leaves the public URL alone and does not stop start-up', async () => {
    const logs = logCollector();
    const ipService = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('<html>not an address</html>') });
    const t = await createTestApp(
      { SVC_PUBLIC_URL: '', SVC_PUBLIC_IP_URL: `http://127.0.0.1:${ipService.port}/`, SVC_LOG_LEVEL: 'warn' },
      undefined,
      { logDestination: logs.destination },
    );
    try {
      await waitFor('the warning', async () => logs.lines.some((line) => line.includes('the public IP could not be detected')));
      expect((await t.request({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
      expect((await t.request({ method: 'GET', url: '/api/v1/settings/public-url' })).json()).toEqual({ public_url: null, source: null });
    } finally {
      await t.close();
      await ipService.stop(true);
    }
  });
});
