import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { decodeJwt } from 'jose';
import { HEARTBEAT_INTERVAL_MS } from '../src/publishing/heartbeat.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, type HubRecordedRequest, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { createEndpoint, createModel } from './helpers/fixtures.ts';
import { type ConnectedMarketplace, connectMarketplace, logCollector } from './helpers/hub.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * The satellite registry of SyftHub since 2026-08 (API-CONTRACT 9.1), through knode's HTTP API against
 * the hub double in both of its versions: the newest hub (`2026-09`), where tokens name this knode's
 * satellite and an account running two spaces needs `satellite_id` on every write, and the hub of
 * 2026-07, which has no registry and with which everything stays as it was.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const setPublicUrl = (t: TestApp, user: TestUser, publicUrl: string) =>
  t.request({ method: 'PATCH', url: '/api/v1/settings/public-url', token: user.token, payload: { public_url: publicUrl } });
const statusOf = async (t: TestApp, user: TestUser, id: string) =>
  (await t.request({ method: 'GET', url: `/api/v1/marketplaces/${id}/status`, token: user.token })).json();
const publish = (t: TestApp, user: TestUser, slug: string, marketplaceId: string) =>
  t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/publish`, token: user.token, payload: { marketplace_ids: [marketplaceId] } });
const query = (t: TestApp, slug: string, token: string, headers: Record<string, string> = {}) =>
  t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token, headers, payload: { messages: 'Hello' } });
const callsSince = (hub: FakeSyftHub, index: number) => hub.requests.slice(index).map((request) => `${request.method} ${request.path}`);
const lastCall = (hub: FakeSyftHub, method: string, path: string): HubRecordedRequest | undefined =>
  hub.requests.filter((request) => request.method === method && request.path === path).at(-1);

/** The body of the last such request to the hub ({} when there was none). */
const sentBody = <T>(hub: FakeSyftHub, method: string, path: string): T => (lastCall(hub, method, path)?.body ?? {}) as T;

/** Moves the app's clock to its next heartbeat, once the last one has ended (the next is timed from its end). */
async function nextHeartbeat(t: TestApp): Promise<void> {
  await waitFor('the next heartbeat to be scheduled', async () => t.clock.waiting.includes(HEARTBEAT_INTERVAL_MS));
  t.clock.advance(HEARTBEAT_INTERVAL_MS);
}

/** The hub's API as the account itself uses it (another space of the same account, syft-space elsewhere). */
async function asAccount(hub: FakeSyftHub, username: string, password: string) {
  const login = await fetch(`${hub.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username, password }).toString(),
  });
  const { access_token: session } = (await login.json()) as { access_token: string };
  return (method: string, path: string, body?: unknown) =>
    fetch(`${hub.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${session}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
}

describe('satellite registry: the newest hub (2026-09)', () => {
  let hub: FakeSyftHub;
  let openai: FakeOpenAIServer;
  let t: TestApp;

  beforeAll(async () => {
    hub = await startFakeSyftHub({ version: '2026-09', loginsPerMinute: 1000 });
    openai = startFakeOpenAI();
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
    await openai.close();
  });

  /** An owner with a marketplace, a model and a published summary endpoint, at a public URL. */
  async function publisher(name: string, publicUrl: string) {
    const owner = await t.user(name);
    expect((await setPublicUrl(t, owner, publicUrl)).statusCode).toBe(200);
    const market = await connectMarketplace(t, owner, hub, name);
    const model = await createModel(t, owner, `${name}-model`, { base_url: openai.url, model: 'fake-model' });
    await createEndpoint(t, owner, { slug: `${name}-ep`, model_id: model.id, response_type: 'summary' });
    expect((await publish(t, owner, `${name}-ep`, market.id)).json().results[0].success).toBe(true);
    const satelliteId: string = (await statusOf(t, owner, market.id)).satellite_id;
    expect(satelliteId).toMatch(UUID);
    return { owner, market, modelId: model.id, slug: `${name}-ep`, satelliteId };
  }

  describe('registration', () => {
    test('connecting a marketplace registers this knode’s satellite at the public URL, and keeps its id', async () => {
      const owner = await t.user('reg-connect');
      await setPublicUrl(t, owner, 'https://Reg-Connect.example.net:443/knode/');
      const before = hub.requests.length;
      const market = await connectMarketplace(t, owner, hub, 'reg-connect');
      expect(callsSince(hub, before)).toEqual(['POST /api/v1/auth/login', 'POST /api/v1/satellites']);
      expect(lastCall(hub, 'POST', '/api/v1/satellites')?.body).toEqual({
        kind: 'space',
        base_url: 'https://Reg-Connect.example.net:443/knode',
      });
      const [satellite] = hub.satellitesOf('reg-connect');
      expect(satellite).toMatchObject({ kind: 'space', base_url: 'https://reg-connect.example.net' });
      expect((await statusOf(t, owner, market.id)).satellite_id).toBe(satellite?.id);
    });

    test('without a public URL nothing is registered; setting one registers it instead of PUT /users/me', async () => {
      const owner = await t.user('reg-later');
      const market = await connectMarketplace(t, owner, hub, 'reg-later');
      expect(hub.satellitesOf('reg-later')).toEqual([]);
      expect((await statusOf(t, owner, market.id)).satellite_id).toBeNull();
      const before = hub.requests.length;
      expect((await setPublicUrl(t, owner, 'https://reg-later.example.net')).statusCode).toBe(200);
      expect(callsSince(hub, before)).toEqual(['POST /api/v1/satellites']); // nothing published: no sync
      const [satellite] = hub.satellitesOf('reg-later');
      expect(satellite?.base_url).toBe('https://reg-later.example.net');
      expect(hub.domainOf('reg-later')).toBe('https://reg-later.example.net'); // the hub's profile shows its oldest space
      expect((await statusOf(t, owner, market.id)).satellite_id).toBe(satellite?.id);
    });

    test('a new public URL moves the satellite (same id); one deleted at the hub is registered again; 409 keeps the id', async () => {
      const owner = await t.user('mover');
      await setPublicUrl(t, owner, 'https://first.example.net');
      const market = await connectMarketplace(t, owner, hub, 'mover');
      const id = (await statusOf(t, owner, market.id)).satellite_id;
      const before = hub.requests.length;
      expect((await setPublicUrl(t, owner, 'https://second.example.net')).statusCode).toBe(200);
      expect(callsSince(hub, before)).toEqual([`PUT /api/v1/satellites/${id}`]);
      expect(hub.satellitesOf('mover')).toEqual([expect.objectContaining({ id, base_url: 'https://second.example.net' })]);

      hub.deleteSatellite(id);
      expect((await setPublicUrl(t, owner, 'https://third.example.net')).statusCode).toBe(200);
      const [again] = hub.satellitesOf('mover');
      expect(again?.id).not.toBe(id);
      expect(again?.base_url).toBe('https://third.example.net');
      expect((await statusOf(t, owner, market.id)).satellite_id).toBe(again?.id);

      // Another space of the account holds the next origin: ours keeps its id (tokens name it) and its place.
      hub.addSatellite('mover', 'space', 'https://taken.example.net');
      expect((await setPublicUrl(t, owner, 'https://taken.example.net')).statusCode).toBe(200);
      expect((await statusOf(t, owner, market.id)).satellite_id).toBe(again?.id);
      expect(hub.satellitesOf('mover').find((satellite) => satellite.id === again?.id)?.base_url).toBe('https://third.example.net');
    });

    test('a credentials change registers again: the same account finds its satellite, another account gets its own', async () => {
      const owner = await t.user('cred-change');
      await setPublicUrl(t, owner, 'https://cred.example.net');
      const market = await connectMarketplace(t, owner, hub, 'cred-change');
      const patch = (payload: object) =>
        t.request({ method: 'PATCH', url: `/api/v1/marketplaces/${market.id}`, token: owner.token, payload });
      hub.deleteSatellite((await statusOf(t, owner, market.id)).satellite_id); // the hub lost it meanwhile
      hub.setPassword('cred-change', 'cred-new-password');
      expect((await patch({ password: 'cred-new-password' })).statusCode).toBe(200);
      const [found] = hub.satellitesOf('cred-change');
      expect(found?.base_url).toBe('https://cred.example.net');
      expect((await statusOf(t, owner, market.id)).satellite_id).toBe(found?.id);

      hub.addUser({ username: 'cred-other', email: 'cred-other@hub.example', password: 'cred-other-password' });
      expect((await patch({ username: 'cred-other', password: 'cred-other-password' })).statusCode).toBe(200);
      const [theirs] = hub.satellitesOf('cred-other');
      expect(theirs?.base_url).toBe('https://cred.example.net');
      expect((await statusOf(t, owner, market.id)).satellite_id).toBe(theirs?.id);
    });

    test('a hub that refuses the satellite fails the settings change, and the URL stays as it was', async () => {
      const owner = await t.user('station-owner');
      await setPublicUrl(t, owner, 'https://kept.example.net');
      await connectMarketplace(t, owner, hub, 'station-owner');
      // Its managed wallet (a station) is at that origin: the hub will not make it a space (409 SATELLITE_KIND_MISMATCH).
      hub.addSatellite('station-owner', 'station', 'https://wallet.example.net');
      hub.deleteSatellite(hub.satellitesOf('station-owner')[0]?.id ?? '');
      const refused = await setPublicUrl(t, owner, 'https://wallet.example.net');
      expect(refused.statusCode).toBe(502);
      expect(refused.json().detail).toContain('(409)');
      const stored = await t.request({ method: 'GET', url: '/api/v1/settings/public-url', token: owner.token });
      expect(stored.json().public_url).toBe('https://kept.example.net');
    });
  });

  describe('tokens', () => {
    let alice: Awaited<ReturnType<typeof publisher>>;
    beforeAll(async () => {
      alice = await publisher('sat-alice', 'https://sat-alice.example.net');
    });

    test('aud = this knode’s satellite id is accepted (/verify is told the satellite), and so is aud = the username', async () => {
      const token = await hub.mintTokenFor('carol@consumers.example', 'sat-alice', 'https://sat-alice.example.net/any/path');
      const response = await query(t, alice.slug, token);
      expect(response.statusCode).toBe(200);
      expect(lastCall(hub, 'POST', '/api/v1/verify')?.body).toStrictEqual({ token, satellite_id: alice.satelliteId });
      // The deprecated ?aud=<username> mints the same audience while the account has one satellite.
      expect((await query(t, alice.slug, await hub.mintToken('dave@consumers.example', 'sat-alice'))).statusCode).toBe(200);
      // aud = the hub username (a token of the older hub, or of the minute the new one was deployed) is
      // accepted too, and verified without satellite_id (the hub would call it another satellite's).
      const older = await hub.mintToken('erin@consumers.example', 'sat-alice', { rawAudience: true });
      expect((await query(t, alice.slug, older)).statusCode).toBe(200);
      expect(lastCall(hub, 'POST', '/api/v1/verify')?.body).toStrictEqual({ token: older });
    });

    test('an opaque token is verified with the satellite id', async () => {
      const token = hub.mintOpaqueToken('frank@consumers.example');
      expect((await query(t, alice.slug, token, { 'x-tenant-name': alice.owner.tenant })).statusCode).toBe(200);
      expect(lastCall(hub, 'POST', '/api/v1/verify')?.body).toStrictEqual({ token, satellite_id: alice.satelliteId });
    });

    test('a token for another satellite of the same account is a 401, even naming the tenant', async () => {
      hub.addSatellite('sat-alice', 'space', 'https://other-space.example.org');
      try {
        const token = await hub.mintTokenFor('grace@consumers.example', 'sat-alice', 'https://other-space.example.org');
        expect((await query(t, alice.slug, token)).statusCode).toBe(401);
        const named = await query(t, alice.slug, token, { 'x-tenant-name': alice.owner.tenant });
        expect(named.statusCode).toBe(401);
        expect(named.json()).toEqual({ detail: 'Could not validate credentials' });
      } finally {
        for (const satellite of hub.satellitesOf('sat-alice')) if (satellite.id !== alice.satelliteId) hub.deleteSatellite(satellite.id);
      }
    });
  });

  describe('an account that owns two spaces', () => {
    let bob: Awaited<ReturnType<typeof publisher>>;
    let otherSpace: string;
    let hubAsBob: Awaited<ReturnType<typeof asAccount>>;

    beforeAll(async () => {
      bob = await publisher('two-spaces', 'https://bob-knode.example.net');
      // The same account runs syft-space elsewhere, with an endpoint of its own.
      otherSpace = hub.addSatellite('two-spaces', 'space', 'https://bob-space.example.org').id;
      hubAsBob = await asAccount(hub, 'two-spaces', 'two-spaces-hub-password');
      const created = await hubAsBob('POST', `/api/v1/endpoints?satellite_id=${otherSpace}`, {
        ...hub.endpointsOf('two-spaces').get(bob.slug),
        slug: 'from-syft-space',
        name: 'From syft-space',
      });
      expect(created.status).toBe(201);
    });

    test('the hub refuses a write that does not say which satellite (AmbiguousSatelliteError)', async () => {
      const answer = await hubAsBob('POST', '/api/v1/endpoints/sync', { endpoints: [] });
      expect(answer.status).toBe(422);
      expect(await answer.json()).toEqual({
        detail: {
          code: 'VALIDATION_ERROR',
          message: 'This account owns 2 satellites; specify which one this request is for via satellite_id',
          count: 2,
        },
      });
    });

    test('publish sends ?satellite_id=, and the endpoint is attached to this knode’s satellite', async () => {
      await createEndpoint(t, bob.owner, { slug: 'bob-second', model_id: bob.modelId, response_type: 'summary' });
      const response = await publish(t, bob.owner, 'bob-second', bob.market.id);
      expect(response.json().results[0]).toMatchObject({ success: true, error: null });
      const sent = lastCall(hub, 'POST', '/api/v1/endpoints');
      expect(sent?.query).toEqual({ satellite_id: bob.satelliteId });
      expect(hub.satelliteOf('two-spaces', 'bob-second')).toBe(bob.satelliteId);
      // Published again, the slug is taken: PATCH /endpoints/slug/{slug}, which takes no satellite.
      const before = hub.requests.length;
      expect((await publish(t, bob.owner, 'bob-second', bob.market.id)).json().results[0].success).toBe(true);
      expect(hub.requests.slice(before).map((request) => [request.method, request.path, request.query])).toEqual([
        ['POST', '/api/v1/endpoints', { satellite_id: bob.satelliteId }],
        ['PATCH', '/api/v1/endpoints/slug/bob-second', {}],
      ]);
    });

    test('sync sends satellite_id and replaces only this satellite’s endpoints', async () => {
      const response = await t.request({ method: 'POST', url: '/api/v1/endpoints/sync', token: bob.owner.token });
      expect(response.statusCode).toBe(200);
      expect(response.json()[bob.market.id].sort()).toEqual(['bob-second', bob.slug].sort());
      const sync = sentBody<{ satellite_id?: string; endpoints: unknown[] }>(hub, 'POST', '/api/v1/endpoints/sync');
      expect(sync.satellite_id).toBe(bob.satelliteId);
      expect(hub.satelliteOf('two-spaces', 'from-syft-space')).toBe(otherSpace); // the other space's endpoint stays
      expect(hub.satelliteOf('two-spaces', bob.slug)).toBe(bob.satelliteId);
    });

    test('the heartbeat names the satellite, which the hub marks seen', async () => {
      const seen = hub.healthReports.length;
      await nextHeartbeat(t);
      const report = await waitFor('bob’s heartbeat', async () =>
        hub.healthReports.slice(seen).find((candidate) => candidate.username === 'two-spaces'),
      );
      expect(report.body.satellite_id).toBe(bob.satelliteId);
      expect(report.body.url).toBe('https://bob-knode.example.net');
      const ours = hub.satellitesOf('two-spaces').find((satellite) => satellite.id === bob.satelliteId);
      expect(ours?.base_url).toBe('https://bob-knode.example.net');
      expect(ours?.last_seen_at).toEqual(expect.any(String));
      expect((await statusOf(t, bob.owner, bob.market.id)).last_heartbeat).toMatchObject({ ok: true, error: null });
    });

    test('verification names the satellite: a consumer of this knode gets in', async () => {
      const token = await hub.mintTokenFor('heidi@consumers.example', 'two-spaces', 'https://bob-knode.example.net');
      expect((await query(t, bob.slug, token)).statusCode).toBe(200);
      expect(lastCall(hub, 'POST', '/api/v1/verify')?.body).toStrictEqual({ token, satellite_id: bob.satelliteId });
    });
  });

  test('tags are published cleaned: split, trimmed, lower-cased, refused ones and repeats left out, 10 at most', async () => {
    const owner = await t.user('tagger');
    await setPublicUrl(t, owner, 'https://tagger.example.net');
    const market = await connectMarketplace(t, owner, hub, 'tagger');
    const model = await createModel(t, owner, 'tag-model', { base_url: openai.url, model: 'fake-model' });
    const many = Array.from({ length: 12 }, (_, i) => `t${i}`).join(',');
    const tags = ` Legal ,LEGAL, tax_law, -edge, double--dash, ${'x'.repeat(31)}, law-2026,${many}`;
    await createEndpoint(t, owner, { slug: 'tagged', model_id: model.id, response_type: 'summary', tags });
    await createEndpoint(t, owner, { slug: 'untagged', model_id: model.id, response_type: 'summary' });
    const expected = ['legal', 'law-2026', 't0', 't1', 't2', 't3', 't4', 't5', 't6', 't7'];
    expect((await publish(t, owner, 'tagged', market.id)).json().results[0]).toMatchObject({ success: true, error: null });
    expect(sentBody<{ tags: string[] }>(hub, 'POST', '/api/v1/endpoints').tags).toEqual(expected);
    expect((await publish(t, owner, 'untagged', market.id)).json().results[0].success).toBe(true);
    expect(hub.endpointsOf('tagger').get('untagged')?.tags).toEqual([]);
    expect((await t.request({ method: 'POST', url: '/api/v1/endpoints/sync', token: owner.token })).statusCode).toBe(200);
    const sync = sentBody<{ endpoints: { slug: string; tags: string[] }[] }>(hub, 'POST', '/api/v1/endpoints/sync');
    expect(Object.fromEntries(sync.endpoints.map((endpoint) => [endpoint.slug, endpoint.tags]))).toEqual({
      tagged: expected,
      untagged: [],
    });
  });
});

describe('satellite registry: start-up', () => {
  test('existing marketplaces register at start-up before the sync; a hub that is down is retried at the heartbeats', async () => {
    const hub = await startFakeSyftHub({ version: '2026-09', loginsPerMinute: 1000 });
    const dataDir = tempDir();
    try {
      // A knode of before the registry: a marketplace, a public URL and a published endpoint, no satellite id.
      const first = await createTestApp({}, dataDir);
      const owner = await first.user('restarter');
      await setPublicUrl(first, owner, 'https://restarter.example.net');
      const market: ConnectedMarketplace = await connectMarketplace(first, owner, hub, 'restarter');
      const model = await createModel(first, owner, 'm');
      await createEndpoint(first, owner, { slug: 'kept', model_id: model.id, response_type: 'summary' });
      expect((await publish(first, owner, 'kept', market.id)).json().results[0].success).toBe(true);
      const forget = async (app: TestApp) => {
        await app.services.database.db.updateTable('marketplaces').set({ satellite_id: null, satellite_url: null }).execute();
        for (const satellite of hub.satellitesOf('restarter')) hub.deleteSatellite(satellite.id);
      };
      await forget(first);
      await first.close({ keepData: true });

      const second = await createTestApp({}, dataDir);
      try {
        const [satellite] = await waitFor('the start-up registration', async () =>
          hub.satellitesOf('restarter').length > 0 ? hub.satellitesOf('restarter') : undefined,
        );
        expect(satellite?.base_url).toBe('https://restarter.example.net');
        await waitFor('the start-up sync', async () => hub.endpointsOf('restarter').has('kept'));
        expect(sentBody<{ satellite_id?: string }>(hub, 'POST', '/api/v1/endpoints/sync').satellite_id).toBe(satellite?.id);
        expect(hub.satelliteOf('restarter', 'kept')).toBe(satellite?.id);
        expect((await statusOf(second, owner, market.id)).satellite_id).toBe(satellite?.id);
        await forget(second);
      } finally {
        await second.close({ keepData: true });
      }

      await hub.down();
      const logs = logCollector();
      const third = await createTestApp({ SVC_LOG_LEVEL: 'info' }, dataDir, { logDestination: logs.destination });
      try {
        await waitFor('the failed registration', async () => logs.lines.some((line) => line.includes('tried again later')));
        expect((await third.request({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
        await hub.up();
        await nextHeartbeat(third);
        const [satellite] = await waitFor('the retried registration', async () =>
          hub.satellitesOf('restarter').length > 0 ? hub.satellitesOf('restarter') : undefined,
        );
        await waitFor('the satellite id kept', async () => (await statusOf(third, owner, market.id)).satellite_id === satellite?.id);
        // The endpoints are synced to it once it is there.
        await waitFor('the sync after the registration', async () => hub.satelliteOf('restarter', 'kept') === satellite?.id);
      } finally {
        await third.close({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      await hub.close();
    }
  });
});

describe('multi-tenancy: the tenant travels in connect', () => {
  test('connect[0].config carries tenant_name, which consumers send back as X-Tenant-Name', async () => {
    const hub = await startFakeSyftHub({ version: '2026-09' });
    const openai = startFakeOpenAI();
    const t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_MULTI_TENANCY: 'true', SVC_OPEN_REGISTRATION: 'true' });
    try {
      const owner = await t.user('multi-owner', { grantRoots: false });
      const market = await connectMarketplace(t, owner, hub, 'multi-owner');
      const model = await createModel(t, owner, 'mm', { base_url: openai.url, model: 'fake-model' });
      await createEndpoint(t, owner, { slug: 'multi-ep', model_id: model.id, response_type: 'summary' });
      expect((await publish(t, owner, 'multi-ep', market.id)).json().results[0].success).toBe(true);
      const config = hub.endpointsOf('multi-owner').get('multi-ep')?.connect[0]?.config;
      expect(config).toEqual({ path: '/api/v1/endpoints/multi-ep/query', tenant_name: owner.tenant });
    } finally {
      await t.close();
      await hub.close();
      await openai.close();
    }
  });
});

describe('satellite registry: the hub of 2026-07 (none)', () => {
  let hub: FakeSyftHub;
  let openai: FakeOpenAIServer;
  let t: TestApp;
  beforeAll(async () => {
    hub = await startFakeSyftHub({ version: '2026-07' });
    openai = startFakeOpenAI();
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
    await openai.close();
  });

  test('the registry answers 404: the public URL is the domain, and nothing names a satellite', async () => {
    const owner = await t.user('elder');
    await setPublicUrl(t, owner, 'https://elder.example.net');
    const before = hub.requests.length;
    const market = await connectMarketplace(t, owner, hub, 'elder');
    expect(callsSince(hub, before)).toEqual(['POST /api/v1/auth/login', 'POST /api/v1/satellites']);
    expect((await statusOf(t, owner, market.id)).satellite_id).toBeNull();
    expect((await setPublicUrl(t, owner, 'https://elder-two.example.net')).statusCode).toBe(200);
    expect(hub.domainOf('elder')).toBe('https://elder-two.example.net');

    const model = await createModel(t, owner, 'em', { base_url: openai.url, model: 'fake-model' });
    await createEndpoint(t, owner, { slug: 'elder-ep', model_id: model.id, response_type: 'summary', tags: 'Old,Hub' });
    expect((await publish(t, owner, 'elder-ep', market.id)).json().results[0].success).toBe(true);
    expect(lastCall(hub, 'POST', '/api/v1/endpoints')?.query).toEqual({});
    expect(hub.endpointsOf('elder').get('elder-ep')?.tags).toEqual(['old', 'hub']);
    await t.request({ method: 'POST', url: '/api/v1/endpoints/sync', token: owner.token });
    expect(Object.keys(sentBody<object>(hub, 'POST', '/api/v1/endpoints/sync'))).toEqual(['endpoints']);

    const token = await hub.mintToken('ivan@consumers.example', 'elder');
    expect((await query(t, 'elder-ep', token)).statusCode).toBe(200);
    expect(lastCall(hub, 'POST', '/api/v1/verify')?.body).toStrictEqual({ token });

    const seen = hub.healthReports.length;
    await nextHeartbeat(t);
    const report = await waitFor('a heartbeat', async () => hub.healthReports[seen]);
    expect(Object.keys(report.body).sort()).toEqual(['endpoints', 'ttl_seconds', 'url']);
  });
});

describe('the hub double answers like the hub it stands for', () => {
  test('2026-09: satellites keyed by their canonical origin, with the hub’s 201/204/404/409/422 answers', async () => {
    const hub = await startFakeSyftHub({ version: '2026-09' });
    try {
      hub.addUser({ username: 'owner', email: 'owner@hub.example', password: 'owner-password' });
      hub.addUser({ username: 'stranger', email: 'stranger@hub.example', password: 'stranger-password' });
      const owner = await asAccount(hub, 'owner', 'owner-password');
      const stranger = await asAccount(hub, 'stranger', 'stranger-password');
      const post = async (body: object) => {
        const answer = await owner('POST', '/api/v1/satellites', body);
        return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
      };
      const created = await post({ kind: 'space', base_url: ' HTTPS://Knode.Example:443/some/path?q=1#f ' });
      expect(created).toEqual({
        status: 201,
        body: {
          id: expect.stringMatching(UUID),
          kind: 'space',
          base_url: 'https://knode.example',
          last_seen_at: null,
          created_at: expect.any(String),
        },
      });
      const id = created.body.id as string;
      expect((await post({ kind: 'space', base_url: 'https://knode.example/other' })).body.id).toBe(id); // idempotent on the origin
      expect((await post({ kind: 'station', base_url: 'https://knode.example' })).body).toEqual({
        detail: { code: 'SATELLITE_KIND_MISMATCH', message: expect.any(String), expected: 'station', actual: 'space' },
      });
      expect((await post({ kind: 'space', base_url: 'tunneling:owner' })).body.base_url).toBe('tunneling:owner');
      for (const base_url of ['ftp://knode.example', 'https://user:pw@knode.example', 'not a url', `https://${'a'.repeat(500)}.example`]) {
        const refused = await post({ kind: 'space', base_url });
        expect(refused.status).toBe(422);
        expect((refused.body.detail as { loc: string[] }[])[0]?.loc).toEqual(['body', 'base_url']);
      }
      expect((await owner('GET', '/api/v1/satellites/not-a-uuid')).status).toBe(422);
      const foreign = await stranger('GET', `/api/v1/satellites/${id}`);
      expect(foreign.status).toBe(404);
      expect(await foreign.json()).toEqual({ detail: { code: 'NOT_FOUND', message: `Satellite '${id}' not found` } });
      const moved = await owner('PUT', `/api/v1/satellites/${id}`, { base_url: 'http://moved.example:8080/x' });
      expect(await moved.json()).toMatchObject({ id, base_url: 'http://moved.example:8080' });
      const conflict = await owner('PUT', `/api/v1/satellites/${id}`, { base_url: 'tunneling:owner' });
      expect(conflict.status).toBe(409);
      expect(((await conflict.json()) as { detail: { code: string } }).detail.code).toBe('CONFLICT');
      expect(((await (await owner('GET', '/api/v1/satellites')).json()) as { id: string }[]).map((satellite) => satellite.id)[0]).toBe(id);
      // Tokens name a satellite: an unknown owner, or an origin it does not serve, mints nothing.
      expect((await owner('GET', '/api/v1/token?owner_username=nobody&resource=https://x.example')).status).toBe(404);
      const unserved = await owner('GET', '/api/v1/token?owner_username=owner&resource=https://elsewhere.example');
      expect(unserved.status).toBe(422);
      const minted = await owner('GET', '/api/v1/token?owner_username=owner&resource=http://moved.example:8080/api');
      const { target_token: token } = (await minted.json()) as { target_token: string };
      expect(decodeJwt(token).aud).toBe(id);
      expect((await owner('GET', '/api/v1/token?aud=owner')).status).toBe(422); // two satellites: the deprecated form is ambiguous
      // Tags: more than 10, or one the rule refuses, is a 422 for the whole item.
      const endpoint = {
        name: 'e',
        slug: 'tagged',
        description: '',
        type: 'model',
        visibility: 'public',
        version: '0.1.0',
        readme: '',
        policies: [],
        connect: [],
      };
      for (const tags of [Array.from({ length: 11 }, (_, i) => `t${i}`), ['no_underscore'], ['-edge'], ['dou--ble']]) {
        expect((await owner('POST', `/api/v1/endpoints?satellite_id=${id}`, { ...endpoint, tags })).status).toBe(422);
      }
      expect((await owner('POST', `/api/v1/endpoints?satellite_id=${id}`, { ...endpoint, tags: [' A ', 'a'] })).status).toBe(201);
      expect(hub.endpointsOf('owner').get('tagged')?.tags).toEqual(['a']);
      expect((await owner('DELETE', `/api/v1/satellites/${id}`)).status).toBe(204);
      expect(hub.endpointsOf('owner').has('tagged')).toBe(false); // the endpoints it served go with it
    } finally {
      await hub.close();
    }
  });

  test('2026-07: no registry (FastAPI’s 404), satellite_id ignored, tokens name the username', async () => {
    const hub = await startFakeSyftHub();
    try {
      hub.addUser({ username: 'elder', email: 'elder@hub.example', password: 'elder-password' });
      const elder = await asAccount(hub, 'elder', 'elder-password');
      const absent = await elder('POST', '/api/v1/satellites', { kind: 'space', base_url: 'https://elder.example' });
      expect(absent.status).toBe(404);
      expect(await absent.json()).toEqual({ detail: 'Not Found' });
      const minted = await elder('GET', '/api/v1/token?aud=elder');
      const { target_token: token } = (await minted.json()) as { target_token: string };
      expect(decodeJwt(token).aud).toBe('elder');
      const verified = await elder('POST', '/api/v1/verify', { token, satellite_id: crypto.randomUUID() });
      expect(await verified.json()).toMatchObject({ valid: true, email: 'elder@hub.example', aud: 'elder' });
    } finally {
      await hub.close();
    }
  });
});
