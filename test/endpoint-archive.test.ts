import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY, ISO_UTC } from './helpers/constants.ts';
import { createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { type ConnectedMarketplace, connectMarketplace, logCollector } from './helpers/hub.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * Archiving an endpoint (issue 27, item 7; API-CONTRACT 4, "Archive"): off every marketplace and refusing
 * queries while it keeps its policies and usage, listed apart, published again where it was when unarchived;
 * a marketplace that cannot be told is retried at the heartbeats.
 */
describe('archiving an endpoint', () => {
  let t: TestApp;
  let hub: FakeSyftHub;
  let second: FakeSyftHub;
  let openai: FakeOpenAIServer;
  let alice: TestUser;
  let bob: TestUser;
  let market: ConnectedMarketplace;
  let other: ConnectedMarketplace;
  let modelId: string;
  const logs = logCollector();

  const post = (url: string, user: TestUser = alice, payload?: object | string) =>
    t.request({ method: 'POST', url: `/api/v1${url}`, token: user.token, ...(payload === undefined ? {} : { payload }) });
  const get = (url: string, user: TestUser = alice) => t.request({ method: 'GET', url: `/api/v1${url}`, token: user.token });
  const ask = (slug: string, token: string) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token, payload: { messages: 'Hello' } });
  /** A summary endpoint of alice's, published to both her marketplaces. */
  const published = async (slug: string) => {
    const endpoint = await createEndpoint(t, alice, { name: slug, slug, model_id: modelId, response_type: 'summary' });
    const answer = await post(`/endpoints/${slug}/publish`, alice, { publish_to_all_marketplaces: true });
    expect(answer.json().results.map((result: { success: boolean }) => result.success)).toEqual([true, true]);
    return endpoint;
  };
  const links = (endpointId: string) =>
    t.services.database.db
      .selectFrom('endpoint_marketplaces')
      .select(['marketplace_id', 'withdrawn_at'])
      .where('endpoint_id', '=', endpointId)
      .execute();
  /** Whether each of alice's two marketplaces took the endpoint off: [first hub, second hub]. */
  const withdrawn = async (endpointId: string) => {
    const rows = await links(endpointId);
    return [market.id, other.id].map((id) => rows.find((row) => row.marketplace_id === id)?.withdrawn_at !== null);
  };
  /** Both of alice's marketplaces, in any order (both are published to at the same moment). */
  const both = () => expect.arrayContaining([market.id, other.id]);

  beforeAll(async () => {
    hub = await startFakeSyftHub({ loginsPerMinute: 1000 });
    second = await startFakeSyftHub({ loginsPerMinute: 1000 });
    openai = startFakeOpenAI();
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true', SVC_LOG_LEVEL: 'warn' }, undefined, {
      logDestination: logs.destination,
    });
    alice = await t.user('alice');
    bob = await t.user('bob');
    market = await connectMarketplace(t, alice, hub, 'alice');
    other = await connectMarketplace(t, alice, second, 'alice-two', { name: 'second hub' });
    modelId = (await createModel(t, alice, 'fake', { base_url: openai.url, model: 'fake-model' })).id;
  });

  afterAll(async () => {
    await t.close();
    await hub.close();
    await second.close();
    await openai.close();
  });

  test('is taken off every marketplace, keeps its policies and usage, and is published there again when unarchived', async () => {
    const endpoint = await published('papers');
    const policy = await createPolicy(t, alice, { endpoint_id: endpoint.id, policy_type: 'rate_limit', configuration: { rate: '100/m' } });
    expect((await ask('papers', alice.token)).statusCode).toBe(200);
    expect(hub.endpointsOf('alice').has('papers')).toBe(true);
    expect(second.endpointsOf('alice-two').has('papers')).toBe(true);

    const archived = await post('/endpoints/papers/archive');
    expect(archived.statusCode).toBe(200);
    const view = archived.json();
    expect(view).toMatchObject({ slug: 'papers', archived: true, published: false, published_to: [] });
    expect(view.archived_at).toMatch(ISO_UTC);
    expect(view.archived_from).toEqual(both());
    expect(view.archived_from).toHaveLength(2);
    expect(view.policies.map((kept: { id: string }) => kept.id)).toEqual([policy.id]);
    expect(hub.endpointsOf('alice').has('papers')).toBe(false);
    expect(second.endpointsOf('alice-two').has('papers')).toBe(false);
    expect(await withdrawn(endpoint.id)).toEqual([true, true]);
    expect((await get('/endpoints/papers/usage')).json()).toHaveLength(1);
    // Both marketplaces' status no longer list it.
    expect((await get(`/marketplaces/${market.id}/status`)).json().published_endpoints).toEqual([]);

    // Archiving again changes nothing (the same time, no call to the hubs).
    const before = hub.requests.length;
    const again = await post('/endpoints/papers/archive');
    expect(again.json().archived_at).toBe(view.archived_at);
    expect(hub.requests.length).toBe(before);

    const unarchived = await post('/endpoints/papers/unarchive');
    expect(unarchived.statusCode).toBe(200);
    expect(unarchived.json()).toMatchObject({
      archived: false,
      archived_at: null,
      archived_from: [],
      published: true,
      published_to: both(),
    });
    expect(hub.endpointsOf('alice').get('papers')?.policies).toHaveLength(1);
    expect(second.endpointsOf('alice-two').has('papers')).toBe(true);
    expect(await withdrawn(endpoint.id)).toEqual([false, false]);
    expect((await ask('papers', alice.token)).statusCode).toBe(200);
    expect((await get('/endpoints/papers/usage')).json()).toHaveLength(2);
  });

  test('refuses queries while archived: 409 to the owner, 403 (as unpublished) to satellite tokens', async () => {
    await published('answers');
    const consumer = await hub.mintToken('carol@consumers.example', 'alice');
    expect((await ask('answers', consumer)).statusCode).toBe(200);

    await post('/endpoints/answers/archive');
    const owner = await ask('answers', alice.token);
    expect(owner.statusCode).toBe(409);
    expect(owner.json()).toEqual({ detail: 'Endpoint is archived' });
    const satellite = await ask('answers', await hub.mintToken('carol@consumers.example', 'alice'));
    expect(satellite.statusCode).toBe(403);
    expect(satellite.json()).toEqual({ detail: 'Endpoint is not published' });

    await post('/endpoints/answers/unarchive');
    expect((await ask('answers', alice.token)).statusCode).toBe(200);
    expect((await ask('answers', await hub.mintToken('carol@consumers.example', 'alice'))).statusCode).toBe(200);
  });

  test('an endpoint never published is archived and unarchived without a marketplace call', async () => {
    await createEndpoint(t, alice, { name: 'quiet', slug: 'quiet', model_id: modelId, response_type: 'summary' });
    const before = hub.requests.length + second.requests.length;
    expect((await post('/endpoints/quiet/archive')).json()).toMatchObject({ archived: true, archived_from: [] });
    expect((await post('/endpoints/quiet/unarchive')).json()).toMatchObject({ archived: false, published: false });
    expect(hub.requests.length + second.requests.length).toBe(before);
  });

  test('lists show the endpoints in use unless asked: ?archived=true, false or all', async () => {
    const user = await t.user();
    const model = await createModel(t, user, 'lister');
    for (const slug of ['one', 'two', 'three']) {
      await createEndpoint(t, user, { name: slug, slug, model_id: model.id, response_type: 'summary' });
    }
    await post('/endpoints/two/archive', user);
    const slugs = async (query: string) => {
      const response = await get(`/endpoints/${query}`, user);
      expect(response.statusCode).toBe(200);
      return response.json().map((item: { slug: string; archived: boolean }) => `${item.slug}${item.archived ? ' (archived)' : ''}`);
    };
    expect(await slugs('')).toEqual(['one', 'three']);
    expect(await slugs('?archived=false')).toEqual(['one', 'three']);
    expect(await slugs('?archived=true')).toEqual(['two (archived)']);
    expect(await slugs('?archived=all')).toEqual(['one', 'two (archived)', 'three']);
    const page = (await get('/endpoints/?archived=true&limit=10', user)).json();
    expect(page).toMatchObject({ total: 1, skip: 0, limit: 10 });
    expect((await get('/endpoints/?limit=1', user)).json()).toMatchObject({ total: 2, items: [{ slug: 'one' }] });
    expect(issueLocs(await get('/endpoints/?archived=yes', user))).toEqual(['query.archived']);
    // The archived endpoint is still read by its slug.
    expect((await get('/endpoints/two', user)).json()).toMatchObject({ archived: true });
  });

  test('needs credentials (401), and another tenant’s endpoint is not found (404)', async () => {
    await createEndpoint(t, alice, { name: 'mine', slug: 'mine', model_id: modelId, response_type: 'summary' });
    for (const action of ['archive', 'unarchive']) {
      const anonymous = await t.request({ method: 'POST', url: `/api/v1/endpoints/mine/${action}` });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.headers['www-authenticate']).toBe('Bearer');
      const foreign = await post(`/endpoints/mine/${action}`, bob);
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json()).toEqual({ detail: "Endpoint 'mine' not found" });
    }
    expect((await get('/endpoints/mine')).json().archived).toBe(false);
  });

  test('a body that is not an object, or not JSON, is a 422; an empty object is no body', async () => {
    await createEndpoint(t, alice, { name: 'bodies', slug: 'bodies', model_id: modelId, response_type: 'summary' });
    const json = { 'content-type': 'application/json' };
    for (const action of ['archive', 'unarchive']) {
      const url = `/api/v1/endpoints/bodies/${action}`;
      expect(issueLocs(await t.request({ method: 'POST', url, token: alice.token, headers: json, payload: '[1]' }))).toEqual(['body']);
      expect(issueLocs(await t.request({ method: 'POST', url, token: alice.token, headers: json, payload: 'archive' }))).toEqual(['body']);
      expect((await get('/endpoints/bodies')).json().archived).toBe(false);
    }
    expect((await post('/endpoints/bodies/archive', alice, {})).json().archived).toBe(true);
    expect((await post('/endpoints/bodies/unarchive', alice, {})).json().archived).toBe(false);
  });

  test('cannot be published or unpublished while archived (409 saying why); deleting it still works', async () => {
    const endpoint = await published('shelved');
    await post('/endpoints/shelved/archive');
    const publish = await post('/endpoints/shelved/publish', alice, { publish_to_all_marketplaces: true });
    expect(publish.statusCode).toBe(409);
    expect(publish.json().detail).toBe("Endpoint 'shelved' is archived: unarchive it to publish it");
    const unpublish = await post('/endpoints/shelved/unpublish', alice, { unpublish_from_all: true });
    expect(unpublish.statusCode).toBe(409);
    expect(hub.endpointsOf('alice').has('shelved')).toBe(false);

    const before = hub.requests.length;
    const deleted = await t.request({ method: 'DELETE', url: '/api/v1/endpoints/shelved', token: alice.token });
    expect(deleted.statusCode).toBe(200);
    expect((await get('/endpoints/shelved')).statusCode).toBe(404);
    expect(await links(endpoint.id)).toEqual([]);
    // The hub is told again, and answers that it no longer has it.
    expect(hub.requests.slice(before).some((request) => request.method === 'DELETE' && request.path.endsWith('/slug/shelved'))).toBe(true);
  });

  test('sync and heartbeats leave an archived endpoint out', async () => {
    await published('kept');
    await published('boxed');
    await post('/endpoints/boxed/archive');
    const synced = (await post('/endpoints/sync')).json();
    expect(synced[market.id]).toContain('kept');
    expect(synced[market.id]).not.toContain('boxed');
    expect(hub.endpointsOf('alice').has('boxed')).toBe(false);
    // The heartbeat reports the endpoints in use only.
    // Settings are the operator's (the admin key, naming the tenant).
    const url = await t.request({
      method: 'PATCH',
      url: '/api/v1/settings/public-url',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-tenant-name': alice.tenant },
      payload: { public_url: 'https://alice.example' },
    });
    expect(url.statusCode).toBe(200);
    const seen = hub.healthReports.length;
    await heartbeat();
    const report = hub.healthReports.slice(seen).at(-1);
    expect(report?.body.endpoints.map((endpoint) => endpoint.slug)).toContain('kept');
    expect(report?.body.endpoints.map((endpoint) => endpoint.slug)).not.toContain('boxed');

    await post('/endpoints/boxed/unarchive');
    expect((await post('/endpoints/sync')).json()[market.id]).toContain('boxed');
  });

  test('with a marketplace down: archived here at once, taken off there at a later heartbeat (backing off meanwhile)', async () => {
    const endpoint = await published('stormy');
    const failures = () => logs.lines.filter((line) => line.includes('could not take an archived endpoint off its marketplace')).length;
    await hub.down();
    const archived = await post('/endpoints/stormy/archive');
    expect(archived.statusCode).toBe(200);
    expect(archived.json()).toMatchObject({ archived: true, published_to: [], archived_from: both() });
    expect((await ask('stormy', alice.token)).statusCode).toBe(409);
    expect(second.endpointsOf('alice-two').has('stormy')).toBe(false); // the other marketplace was told
    expect(await withdrawn(endpoint.id)).toEqual([false, true]);
    expect(failures()).toBe(1);

    // Tried again at the next heartbeat, and the one after; then one interval is skipped (1, 2, 4... apart).
    await heartbeat();
    expect(failures()).toBe(2);
    await heartbeat();
    expect(failures()).toBe(3);
    await heartbeat();
    expect(failures()).toBe(3);
    await hub.up();
    expect(hub.endpointsOf('alice').has('stormy')).toBe(true);
    await heartbeat();
    expect(hub.endpointsOf('alice').has('stormy')).toBe(false);
    expect(await withdrawn(endpoint.id)).toEqual([true, true]);

    // Unarchived while a marketplace is down: listed again at once where it can be, there once it is back.
    await hub.down();
    const unarchived = await post('/endpoints/stormy/unarchive');
    expect(unarchived.json()).toMatchObject({ archived: false, published_to: both() });
    expect(second.endpointsOf('alice-two').has('stormy')).toBe(true);
    expect(await withdrawn(endpoint.id)).toEqual([true, false]);
    await hub.up();
    await heartbeat();
    expect(hub.endpointsOf('alice').has('stormy')).toBe(true);
    expect(await withdrawn(endpoint.id)).toEqual([false, false]);
  });

  /** Moves the app's clock to its next heartbeat and waits until that beat is over (the next one is scheduled). */
  async function heartbeat(): Promise<void> {
    t.clock.advance(30_000);
    await waitFor('the heartbeat to end', async () => t.clock.waiting.includes(30_000));
  }
});
