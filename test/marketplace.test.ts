import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY, UNKNOWN_ID } from './helpers/constants.ts';
import { createDataset, createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { type ConnectedMarketplace, connectMarketplace, logCollector } from './helpers/hub.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * End to end against the SyftHub double: an owner connects a marketplace, publishes endpoints, a
 * consumer gets a satellite token at the hub and queries knode with it.
 */
describe('marketplace: publish, satellite tokens, queries', () => {
  let t: TestApp;
  let hub: FakeSyftHub;
  let openai: FakeOpenAIServer;
  let alice: TestUser;
  let mallory: TestUser;
  let market: ConnectedMarketplace;
  let modelId: string;
  let datasetId: string;
  const logs = logCollector();
  const responses: string[] = [];

  /** Every request of this suite goes through here, so that no response can hide a secret. */
  const send = async (options: InjectOptions & { token?: string }): Promise<LightMyRequestResponse> => {
    const response = await t.request(options);
    responses.push(response.body);
    return response;
  };
  const query = (slug: string, token: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    send({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token, headers, payload: { messages: 'Hello', ...extra } });
  const publish = (slug: string, payload: object, user: TestUser = alice) =>
    send({ method: 'POST', url: `/api/v1/endpoints/${slug}/publish`, token: user.token, payload });
  const unpublish = (slug: string, payload: object, user: TestUser = alice) =>
    send({ method: 'POST', url: `/api/v1/endpoints/${slug}/unpublish`, token: user.token, payload });
  const endpointView = async (slug: string) => (await send({ method: 'GET', url: `/api/v1/endpoints/${slug}`, token: alice.token })).json();
  const summaryEndpoint = (slug: string, extra: Record<string, unknown> = {}) =>
    createEndpoint(t, alice, { name: slug, slug, model_id: modelId, response_type: 'summary', ...extra });

  beforeAll(async () => {
    // This suite logs in more than 10 times a minute; the limit itself is tested on its own below.
    hub = await startFakeSyftHub({ loginsPerMinute: 1000 });
    openai = startFakeOpenAI();
    // Heartbeats have their own suite: the app's clock is never advanced here, so none adds to the hub's record.
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true', SVC_LOG_LEVEL: 'debug' }, undefined, {
      logDestination: logs.destination,
    });
    alice = await t.user('alice');
    mallory = await t.user('mallory');
    market = await connectMarketplace(t, alice, hub, 'alice');
    modelId = (await createModel(t, alice, 'fake', { base_url: openai.url, model: 'fake-model' })).id;
    datasetId = (await createDataset(t, alice, 'docs')).id;
  });

  afterAll(async () => {
    await t.close();
    await hub.close();
    await openai.close();
  });

  describe('connecting a marketplace', () => {
    test('the credentials are checked at the hub with one form login; refused ones are a 400 naming the marketplace', async () => {
      hub.addUser({ username: 'bob', email: 'bob@hub.example', password: 'bob-right-password' });
      const user = await t.user('bob');
      const before = hub.logins;
      const refused = await send({
        method: 'POST',
        url: '/api/v1/marketplaces/',
        token: user.token,
        payload: { name: 'Hub', url: hub.url, username: 'bob', password: 'bob-wrong-password' },
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().detail).toBe("Marketplace 'Hub' refused the credentials of 'bob': Incorrect username or password");
      expect(refused.body).not.toContain('bob-wrong-password');
      expect((await send({ method: 'GET', url: '/api/v1/marketplaces/', token: user.token })).json()).toEqual([]);

      const accepted = await send({
        method: 'POST',
        url: '/api/v1/marketplaces/',
        token: user.token,
        payload: { name: 'Hub', url: hub.url, username: 'bob', password: 'bob-right-password' },
      });
      expect(accepted.statusCode).toBe(201);
      expect(accepted.json().is_default).toBe(true);
      expect(hub.logins - before).toBe(2);
      const login = hub.requests.filter((request) => request.path === '/api/v1/auth/login').at(-1);
      expect(login?.body).toEqual({ username: 'bob' }); // form-encoded (the double records no password)
    });

    test('the hub’s login limit (10 a minute) is a 503 that says so', async () => {
      const strict = await startFakeSyftHub({ loginsPerMinute: 2 });
      try {
        const user = await t.user();
        await connectMarketplace(t, user, strict, 'strict-one');
        await connectMarketplace(t, user, strict, 'strict-two');
        strict.addUser({ username: 'strict-three', email: 'three@hub.example', password: 'three-password' });
        const response = await send({
          method: 'POST',
          url: '/api/v1/marketplaces/',
          token: user.token,
          payload: { name: 'third', url: strict.url, username: 'strict-three', password: 'three-password' },
        });
        expect(response.statusCode).toBe(503);
        expect(response.json().detail).toContain('too many logins');
      } finally {
        await strict.close();
      }
    });

    test('a hub that cannot be reached is a 503, and nothing is stored', async () => {
      const user = await t.user();
      const dead = await startFakeSyftHub();
      const url = dead.url;
      await dead.close();
      const response = await send({
        method: 'POST',
        url: '/api/v1/marketplaces/',
        token: user.token,
        payload: { name: 'Gone', url, username: 'x', password: 'x-password' },
      });
      expect(response.statusCode).toBe(503);
      expect(response.json().detail).toStartWith(`Marketplace 'Gone' at ${url} cannot be reached`);
      expect((await send({ method: 'GET', url: '/api/v1/marketplaces/', token: user.token })).json()).toEqual([]);
    });

    test('a hub error answer is a 502', async () => {
      const user = await t.user();
      hub.failWith(500);
      try {
        const response = await send({
          method: 'POST',
          url: '/api/v1/marketplaces/',
          token: user.token,
          payload: { name: 'Broken', url: hub.url, username: 'x', password: 'x-password' },
        });
        expect(response.statusCode).toBe(502);
        expect(response.json().detail).toBe("Marketplace 'Broken' refused to log in (500): The hub is failing on purpose");
      } finally {
        hub.failWith(undefined);
      }
    });

    test('a PATCH of the password checks it first: a refused one is a 400 and the stored one stays', async () => {
      const user = await t.user();
      const connected = await connectMarketplace(t, user, hub, 'patcher');
      const refused = await send({
        method: 'PATCH',
        url: `/api/v1/marketplaces/${connected.id}`,
        token: user.token,
        payload: { password: 'not-the-password' },
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.body).not.toContain('not-the-password');
      hub.setPassword('patcher', 'patcher-new-password');
      const before = hub.logins;
      const accepted = await send({
        method: 'PATCH',
        url: `/api/v1/marketplaces/${connected.id}`,
        token: user.token,
        payload: { password: 'patcher-new-password' },
      });
      expect(accepted.statusCode).toBe(200);
      expect(hub.logins - before).toBe(1);
      // A name change needs no login.
      await send({ method: 'PATCH', url: `/api/v1/marketplaces/${connected.id}`, token: user.token, payload: { name: 'renamed' } });
      expect(hub.logins - before).toBe(1);
    });
  });

  describe('publishing', () => {
    test('publishes the metadata exactly as the contract lists it, and records published_to', async () => {
      const summary = `${'s'.repeat(499)}é and more`;
      const endpoint = await createEndpoint(t, alice, {
        name: 'Knowledge base',
        slug: 'kbase',
        summary,
        description: '# Read me\n\nAll about it.',
        dataset_id: datasetId,
        model_id: modelId,
      });
      await createPolicy(t, alice, {
        name: 'friends only',
        endpoint_id: endpoint.id,
        policy_type: 'access',
        configuration: { mode: 'allow', patterns: ['carol@consumers.example'] },
      });
      await createPolicy(t, alice, {
        name: 'slowly',
        endpoint_id: endpoint.id,
        policy_type: 'rate_limit',
        configuration: { rate: '100/m' },
      });

      const response = await publish('kbase', { marketplace_ids: [market.id] });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        endpoint_slug: 'kbase',
        results: [
          {
            marketplace_id: market.id,
            marketplace_name: market.name,
            success: true,
            message: `Published to '${market.name}'`,
            error: null,
          },
        ],
      });
      expect(hub.endpointsOf('alice').get('kbase')).toEqual({
        name: 'Knowledge base',
        description: `${'s'.repeat(499)}é`,
        type: 'model_data_source',
        visibility: 'public',
        version: '0.1.0',
        slug: 'kbase',
        readme: '# Read me\n\nAll about it.',
        policies: [
          {
            type: 'access',
            version: '1.0',
            enabled: true,
            description: 'friends only',
            config: { mode: 'allow', patterns: ['carol@consumers.example'] },
          },
          { type: 'rate_limit', version: '1.0', enabled: true, description: 'slowly', config: { rate: '100/m' } },
        ],
        tags: [],
        connect: [{ type: 'https', enabled: true, description: '', config: { path: '/api/v1/endpoints/kbase/query' } }],
      });
      const view = await endpointView('kbase');
      expect(view.published).toBe(true);
      expect(view.published_to).toEqual([market.id]);
    });

    test('the type follows the links: model only is model, dataset only is data_source', async () => {
      await summaryEndpoint('only-model');
      await createEndpoint(t, alice, { slug: 'only-data', dataset_id: datasetId, response_type: 'raw' });
      await publish('only-model', { marketplace_ids: [market.id] });
      await publish('only-data', { publish_to_all_marketplaces: true });
      expect(hub.endpointsOf('alice').get('only-model')?.type).toBe('model');
      expect(hub.endpointsOf('alice').get('only-data')?.type).toBe('data_source');
    });

    test('a slug the hub already has is updated with PATCH /endpoints/slug/{slug}', async () => {
      await summaryEndpoint('twice', { summary: 'first' });
      await publish('twice', { marketplace_ids: [market.id] });
      await send({ method: 'PATCH', url: '/api/v1/endpoints/twice', token: alice.token, payload: { summary: 'second' } });
      // The change is sent to the hub in the background; publishing again afterwards takes the same path.
      await waitFor('the background update', async () => hub.endpointsOf('alice').get('twice')?.description === 'second');
      const before = hub.requests.length;
      const response = await publish('twice', { marketplace_ids: [market.id] });
      expect(response.json().results[0]).toMatchObject({ success: true, error: null, message: expect.stringContaining('updated') });
      const calls = hub.requests.slice(before).map((request) => `${request.method} ${request.path}`);
      expect(calls).toEqual(['POST /api/v1/endpoints', 'PATCH /api/v1/endpoints/slug/twice']);
      expect(hub.endpointsOf('alice').get('twice')?.description).toBe('second');
    });

    test('a slug longer than 63 characters is not published (and never cut): that result says why', async () => {
      const slug = `a${'-b'.repeat(31)}c`; // 64 characters
      expect(slug).toHaveLength(64);
      await summaryEndpoint(slug);
      const response = await publish(slug, { marketplace_ids: [market.id] });
      expect(response.statusCode).toBe(200);
      const [result] = response.json().results;
      expect(result).toMatchObject({ marketplace_id: market.id, success: false, error: expect.stringContaining('at most 63') });
      expect(hub.endpointsOf('alice').has(slug)).toBe(false);
      expect([...hub.endpointsOf('alice').keys()].some((key) => slug.startsWith(key) && key.length === 63)).toBe(false);
      expect((await endpointView(slug)).published_to).toEqual([]);
    });

    test('an unknown, foreign or inactive marketplace gets its own failed result; the others succeed', async () => {
      const foreign = await connectMarketplace(t, mallory, hub, 'mallory');
      const inactive = await connectMarketplace(t, alice, hub, 'alice-sleepy', { is_active: false });
      await summaryEndpoint('mixed');
      const response = await publish('mixed', { marketplace_ids: [UNKNOWN_ID, foreign.id, inactive.id, market.id, market.id] });
      const results = response.json().results;
      expect(results).toHaveLength(4); // the repeated id counts once
      expect(results[0]).toEqual({
        marketplace_id: UNKNOWN_ID,
        marketplace_name: '',
        success: false,
        message: 'Marketplace not found',
        error: `Marketplace '${UNKNOWN_ID}' not found`,
      });
      expect(results[1]).toMatchObject({ marketplace_id: foreign.id, success: false, error: `Marketplace '${foreign.id}' not found` });
      expect(results[2]).toMatchObject({ marketplace_id: inactive.id, success: false, error: expect.stringContaining('not active') });
      expect(results[3]).toMatchObject({ marketplace_id: market.id, success: true });
      expect(hub.endpointsOf('mallory').has('mixed')).toBe(false);
    });

    test('a hub failure is that marketplace’s failed result, naming it', async () => {
      await summaryEndpoint('unlucky');
      hub.failWith(500);
      try {
        const [result] = (await publish('unlucky', { marketplace_ids: [market.id] })).json().results;
        expect(result).toMatchObject({ success: false, message: `Could not publish to '${market.name}'` });
        expect(result.error).toBe(
          `Marketplace '${market.name}' refused to publish endpoint 'unlucky' (500): The hub is failing on purpose`,
        );
      } finally {
        hub.failWith(undefined);
      }
      expect((await endpointView('unlucky')).published).toBe(false);
    });

    test('publish validates its body (422), needs credentials (401), and does not see other tenants (404)', async () => {
      await summaryEndpoint('guarded');
      expect(issueLocs(await publish('guarded', {}))).toEqual(['body.marketplace_ids']);
      expect(issueLocs(await publish('guarded', { publish_to_all_marketplaces: false }))).toEqual(['body.marketplace_ids']);
      expect(issueLocs(await publish('guarded', { marketplace_ids: ['not-a-uuid'] }))).toEqual(['body.marketplace_ids.0']);
      expect(issueLocs(await publish('guarded', { marketplace_ids: [] }))).toEqual(['body.marketplace_ids']);
      expect(issueLocs(await publish('guarded', { publish_to_all_marketplaces: 'yes' }))).toEqual(['body.publish_to_all_marketplaces']);
      const anonymous = await send({
        method: 'POST',
        url: '/api/v1/endpoints/guarded/publish',
        payload: { publish_to_all_marketplaces: true },
      });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json()).toEqual({ detail: 'Not authenticated' });
      const bad = await send({
        method: 'POST',
        url: '/api/v1/endpoints/guarded/publish',
        token: 'nonsense',
        payload: { publish_to_all_marketplaces: true },
      });
      expect(bad.statusCode).toBe(401);
      const foreign = await publish('guarded', { publish_to_all_marketplaces: true }, mallory);
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json()).toEqual({ detail: "Endpoint 'guarded' not found" });
      expect(hub.endpointsOf('alice').has('guarded')).toBe(false);
    });
  });

  describe('satellite tokens', () => {
    beforeAll(async () => {
      await summaryEndpoint('chat');
      await publish('chat', { marketplace_ids: [market.id] });
    });

    test('a consumer queries with a token minted at the hub; the e-mail is the consumer’s', async () => {
      const token = await hub.mintToken('carol@consumers.example', 'alice');
      const response = await query('chat', token);
      expect(response.statusCode).toBe(200);
      expect(response.json().summary.message.role).toBe('assistant');
      const usage = (await send({ method: 'GET', url: '/api/v1/endpoints/chat/usage', token: alice.token })).json();
      expect(usage[0]).toMatchObject({ sender_email: 'carol@consumers.example', status: 'success' });
    });

    test('the consumer’s e-mail reaches the access policy: allowed and denied', async () => {
      const endpoint = await summaryEndpoint('friends');
      await createPolicy(t, alice, {
        endpoint_id: endpoint.id,
        policy_type: 'access',
        configuration: { mode: 'allow', patterns: ['carol@consumers.example'] },
      });
      await publish('friends', { marketplace_ids: [market.id] });
      expect((await query('friends', await hub.mintToken('carol@consumers.example', 'alice'))).statusCode).toBe(200);
      const denied = await query('friends', await hub.mintToken('dave@consumers.example', 'alice'));
      expect(denied.statusCode).toBe(403);
      expect(denied.json()).toMatchObject({
        detail: expect.stringContaining('dave@consumers.example'),
        msg: 'Permission Denied',
        err: expect.stringContaining('dave@consumers.example'),
        policy_metadata: { outcome: 'access_denied' },
      });
      // A body cannot claim another e-mail.
      const claimed = await query('friends', await hub.mintToken('dave@consumers.example', 'alice'), {
        sender_email: 'carol@consumers.example',
      });
      expect(claimed.statusCode).toBe(403);
    });

    test('an unpublished endpoint answers 403 to satellite tokens; its owner may still query it', async () => {
      await summaryEndpoint('private-chat');
      const response = await query('private-chat', await hub.mintToken('carol@consumers.example', 'alice'));
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ detail: 'Endpoint is not published' });
      expect((await query('private-chat', alice.token)).statusCode).toBe(200);
    });

    test('expired, wrong-audience, forged and malformed tokens are 401; the expired one costs the hub nothing', async () => {
      const verificationsBefore = hub.verifications;
      // Expired 5 s ago by knode's clock: the test app's stands still where it started, the hub's is the real one.
      const expiresInSeconds = Math.floor((t.clock.now() - Date.now()) / 1000) - 5;
      const expired = await query('chat', await hub.mintToken('carol@consumers.example', 'alice', { expiresInSeconds }));
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toEqual({ detail: 'Could not validate credentials' });
      expect(hub.verifications).toBe(verificationsBefore);

      hub.addUser({ username: 'someone-else', email: 'someone@hub.example', password: 'whatever-password' });
      expect((await query('chat', await hub.mintToken('carol@consumers.example', 'someone-else'))).statusCode).toBe(401);
      // Naming the tenant does not help: alice's marketplace account is not the audience.
      expect(
        (await query('chat', await hub.mintToken('carol@consumers.example', 'someone-else'), {}, { 'x-tenant-name': alice.tenant }))
          .statusCode,
      ).toBe(401);
      expect((await query('chat', await hub.mintToken('carol@consumers.example', 'alice', { forged: true }))).statusCode).toBe(401);
      for (const garbage of ['eyJhbGciOiJSUzI1NiJ9.e30.c2ln', 'not-a-token', 'sat_live_unknown']) {
        expect((await query('chat', garbage)).statusCode).toBe(401);
      }
    });

    test('a token for one tenant cannot query another tenant’s endpoint', async () => {
      const token = await hub.mintToken('carol@consumers.example', 'alice');
      const response = await query('chat', token, {}, { 'x-tenant-name': mallory.tenant });
      expect(response.statusCode).toBe(401);
    });

    test('naming a tenant that does not exist is a 401, and the token is sent to no marketplace', async () => {
      expect((await query('chat', 'garbage-token', {}, { 'x-tenant-name': 'no-such-tenant' })).statusCode).toBe(401);
      const verifications = hub.verifications;
      const good = await query('chat', await hub.mintToken('carol@consumers.example', 'alice'), {}, { 'x-tenant-name': 'no-such-tenant' });
      expect(good.statusCode).toBe(401);
      expect(hub.verifications).toBe(verifications);
    });

    test('opaque sat_test_ tokens are verified by the hub of the named (or default) tenant', async () => {
      const token = hub.mintOpaqueToken('erin@consumers.example');
      const response = await query('chat', token, {}, { 'x-tenant-name': alice.tenant });
      expect(response.statusCode).toBe(200);
      const usage = (await send({ method: 'GET', url: '/api/v1/endpoints/chat/usage', token: alice.token })).json();
      expect(usage[0].sender_email).toBe('erin@consumers.example');
      // Without a tenant name, the default tenant's marketplace would vouch: it has none.
      expect((await query('chat', hub.mintOpaqueToken('erin@consumers.example'))).statusCode).toBe(401);
    });

    test('a hub outage is a 503 for new tokens and does not disturb a cached verification', async () => {
      const known = await hub.mintToken('carol@consumers.example', 'alice');
      expect((await query('chat', known)).statusCode).toBe(200);
      const fresh = await hub.mintToken('frank@consumers.example', 'alice');
      await hub.down();
      try {
        expect((await query('chat', known)).statusCode).toBe(200);
        const refused = await query('chat', fresh);
        expect(refused.statusCode).toBe(503);
        expect(refused.json().detail).toStartWith(`Marketplace '${market.name}' at ${hub.url} cannot be reached`);
      } finally {
        await hub.up();
      }
      hub.failWith(500);
      try {
        const failing = await query('chat', await hub.mintToken('grace@consumers.example', 'alice'));
        expect(failing.statusCode).toBe(503);
        expect(failing.json().detail).toContain('(500)');
      } finally {
        hub.failWith(undefined);
      }
      expect((await query('chat', fresh)).statusCode).toBe(200);
    });

    test('an expired hub session is refreshed; a new login happens only when the refresh fails', async () => {
      const logins = hub.logins;
      const refreshes = hub.refreshes;
      hub.expireSessions();
      expect((await query('chat', await hub.mintToken('heidi@consumers.example', 'alice'))).statusCode).toBe(200);
      expect(hub.refreshes - refreshes).toBe(1);
      expect(hub.logins).toBe(logins);
      hub.expireSessions({ refresh: true });
      expect((await query('chat', await hub.mintToken('ivan@consumers.example', 'alice'))).statusCode).toBe(200);
      expect(hub.logins - logins).toBe(1);
    });

    test('100 queries by 10 consumers cost at most one hub login, and one verification per token', async () => {
      const quiet = await startFakeSyftHub();
      try {
        const owner = await t.user('busy-owner');
        await connectMarketplace(t, owner, quiet, 'busy');
        const model = await createModel(t, owner, 'busy-model', { base_url: openai.url, model: 'fake-model' });
        await createEndpoint(t, owner, { slug: 'busy-ep', model_id: model.id, response_type: 'summary', published: true });
        const tokens = await Promise.all(Array.from({ length: 10 }, (_, i) => quiet.mintToken(`consumer${i}@consumers.example`, 'busy')));
        const statuses = await Promise.all(
          Array.from({ length: 100 }, (_, i) => query('busy-ep', tokens[i % 10] as string).then((r) => r.statusCode)),
        );
        expect(statuses.every((status) => status === 200)).toBe(true);
        expect(quiet.logins).toBeLessThanOrEqual(1);
        expect(quiet.verifications).toBe(10);
      } finally {
        await quiet.close();
      }
    });

    test('a token signed with a new key is accepted once the key set is fetched again', async () => {
      const keyed = await startFakeSyftHub();
      const app = await createTestApp({}, undefined, { jwksCooldownMs: 0 });
      try {
        const owner = await app.user('rotating');
        await connectMarketplace(app, owner, keyed, 'rotating');
        const model = await createModel(app, owner, 'm', { base_url: openai.url, model: 'fake-model' });
        await createEndpoint(app, owner, { slug: 'rot', model_id: model.id, response_type: 'summary', published: true });
        const ask = async (token: string) =>
          (await app.request({ method: 'POST', url: '/api/v1/endpoints/rot/query', token, payload: { messages: 'hi' } })).statusCode;
        expect(await ask(await keyed.mintToken('carol@consumers.example', 'rotating'))).toBe(200);
        const fetches = keyed.jwksFetches;
        await keyed.rotateKey();
        expect(await ask(await keyed.mintToken('carol@consumers.example', 'rotating'))).toBe(200);
        expect(keyed.jwksFetches).toBe(fetches + 1);
      } finally {
        await app.close();
        await keyed.close();
      }
    });
  });

  describe('keeping published endpoints up to date', () => {
    test('renaming a published endpoint, or changing its policies, updates it at the hub', async () => {
      await summaryEndpoint('kept-fresh', { summary: 'first words' });
      expect((await publish('kept-fresh', { marketplace_ids: [market.id] })).json().results[0].success).toBe(true);
      await send({
        method: 'PATCH',
        url: '/api/v1/endpoints/kept-fresh',
        token: alice.token,
        payload: { name: 'Renamed', summary: 'new words' },
      });
      await waitFor('the hub to see the new name', async () => hub.endpointsOf('alice').get('kept-fresh')?.name === 'Renamed');
      expect(hub.endpointsOf('alice').get('kept-fresh')?.description).toBe('new words');
      const endpointId = (await endpointView('kept-fresh')).id;
      const policy = await createPolicy(t, alice, {
        endpoint_id: endpointId,
        name: 'fair use',
        policy_type: 'rate_limit',
        configuration: { rate: '5/m' },
      });
      await waitFor('the hub to see the policy', async () => (hub.endpointsOf('alice').get('kept-fresh')?.policies ?? []).length === 1);
      await send({ method: 'DELETE', url: `/api/v1/policies/${policy.id}`, token: alice.token });
      await waitFor('the hub to see it gone', async () => (hub.endpointsOf('alice').get('kept-fresh')?.policies ?? []).length === 0);
    });

    test('an endpoint that is not published is not sent anywhere when it changes', async () => {
      await summaryEndpoint('private-change');
      await summaryEndpoint('public-change');
      expect((await publish('public-change', { marketplace_ids: [market.id] })).json().results[0].success).toBe(true);
      const before = hub.requests.length;
      await send({ method: 'PATCH', url: '/api/v1/endpoints/private-change', token: alice.token, payload: { name: 'Still private' } });
      // Changes go out in the order they are made, and the private one needs less work to find it has no
      // marketplace: once the hub sees a later change, the private one has had its turn.
      await send({ method: 'PATCH', url: '/api/v1/endpoints/public-change', token: alice.token, payload: { name: 'Sent' } });
      await waitFor('the later change at the hub', async () => hub.endpointsOf('alice').get('public-change')?.name === 'Sent');
      const sent = JSON.stringify(hub.requests.slice(before));
      expect(sent).toContain('public-change');
      expect(sent).not.toContain('private-change');
      expect(sent).not.toContain('Still private');
      expect(hub.endpointsOf('alice').has('private-change')).toBe(false);
    });
  });

  describe('unpublishing and deleting', () => {
    test('unpublish removes the endpoint from the hub, clears published_to and published', async () => {
      await summaryEndpoint('leaving');
      await publish('leaving', { marketplace_ids: [market.id] });
      expect(hub.endpointsOf('alice').has('leaving')).toBe(true);
      const response = await unpublish('leaving', { marketplace_ids: [market.id] });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        endpoint_slug: 'leaving',
        results: [
          {
            marketplace_id: market.id,
            marketplace_name: market.name,
            success: true,
            message: `Removed from '${market.name}'`,
            error: null,
          },
        ],
      });
      expect(hub.endpointsOf('alice').has('leaving')).toBe(false);
      const view = await endpointView('leaving');
      expect(view.published).toBe(false);
      expect(view.published_to).toEqual([]);
      expect((await query('leaving', await hub.mintToken('carol@consumers.example', 'alice'))).statusCode).toBe(403);
    });

    test('unpublish_from_all leaves every marketplace in published_to; published stays true while one remains', async () => {
      const second = await connectMarketplace(t, alice, hub, 'alice-two');
      await summaryEndpoint('everywhere');
      await publish('everywhere', { marketplace_ids: [market.id, second.id] });
      await unpublish('everywhere', { marketplace_ids: [second.id] });
      expect((await endpointView('everywhere')).published).toBe(true);
      expect((await endpointView('everywhere')).published_to).toEqual([market.id]);
      const all = await unpublish('everywhere', { unpublish_from_all: true });
      expect(all.json().results.map((result: { marketplace_id: string }) => result.marketplace_id)).toEqual([market.id]);
      expect((await endpointView('everywhere')).published).toBe(false);
      expect(hub.endpointsOf('alice').has('everywhere')).toBe(false);
      expect(hub.endpointsOf('alice-two').has('everywhere')).toBe(false);
    });

    test('unpublish validates (422), needs credentials (401), and does not see other tenants (404)', async () => {
      await summaryEndpoint('stay');
      expect(issueLocs(await unpublish('stay', {}))).toEqual(['body.marketplace_ids']);
      expect(issueLocs(await unpublish('stay', { unpublish_from_all: 1 }))).toEqual(['body.unpublish_from_all']);
      expect(
        (await send({ method: 'POST', url: '/api/v1/endpoints/stay/unpublish', payload: { unpublish_from_all: true } })).statusCode,
      ).toBe(401);
      expect((await unpublish('stay', { unpublish_from_all: true }, mallory)).statusCode).toBe(404);
    });

    test('deleting an endpoint removes it from its marketplaces; a hub that is down does not stop the deletion', async () => {
      await summaryEndpoint('doomed');
      await publish('doomed', { marketplace_ids: [market.id] });
      expect((await send({ method: 'DELETE', url: '/api/v1/endpoints/doomed', token: alice.token })).statusCode).toBe(200);
      expect(hub.endpointsOf('alice').has('doomed')).toBe(false);

      await summaryEndpoint('doomed-offline');
      await publish('doomed-offline', { marketplace_ids: [market.id] });
      await hub.down();
      try {
        expect((await send({ method: 'DELETE', url: '/api/v1/endpoints/doomed-offline', token: alice.token })).statusCode).toBe(200);
      } finally {
        await hub.up();
      }
      expect((await send({ method: 'GET', url: '/api/v1/endpoints/doomed-offline', token: alice.token })).statusCode).toBe(404);
      expect(logs.lines.some((line) => line.includes('could not remove a deleted endpoint') && line.includes('doomed-offline'))).toBe(true);
    });
  });

  describe('batch sync', () => {
    test('re-sends every published endpoint per marketplace and answers the slugs', async () => {
      hub.endpointsOf('alice').clear(); // the hub lost everything
      const response = await send({ method: 'POST', url: '/api/v1/endpoints/sync', token: alice.token });
      expect(response.statusCode).toBe(200);
      const published = (await send({ method: 'GET', url: '/api/v1/endpoints/', token: alice.token }))
        .json()
        .filter((endpoint: { published_to: string[] }) => endpoint.published_to.includes(market.id))
        .map((endpoint: { slug: string }) => endpoint.slug);
      const body = response.json();
      expect(body[market.id]).toEqual(published);
      expect(body[market.id]).toContain('kbase');
      expect([...hub.endpointsOf('alice').keys()].sort()).toEqual([...published].sort());
      expect(hub.endpointsOf('alice').get('kbase')?.policies).toHaveLength(2);
      const sync = hub.requests.filter((request) => request.path === '/api/v1/endpoints/sync').at(-1);
      expect((sync?.body as { endpoints: unknown[] } | undefined)?.endpoints).toHaveLength(published.length);
    });

    test('more than 300 endpoints: the sync takes the first 300, the rest are published one by one', async () => {
      const owner = await t.user('crowded');
      const crowded = await connectMarketplace(t, owner, hub, 'crowded');
      const model = await createModel(t, owner, 'crowd-model');
      const tenant = await t.tenant(owner);
      for (let i = 0; i < 302; i++) {
        const created = await t.services.endpoints.create(tenant, {
          name: `e${i}`,
          slug: `crowd-${i}`,
          model_id: model.id,
          response_type: 'summary',
        });
        await t.services.database.db
          .insertInto('endpoint_marketplaces')
          .values({ endpoint_id: created.id, marketplace_id: crowded.id, published_at: new Date().toISOString() })
          .execute();
      }
      const before = hub.requests.length;
      const response = await send({ method: 'POST', url: '/api/v1/endpoints/sync', token: owner.token });
      expect(response.json()[crowded.id]).toHaveLength(302);
      const calls = hub.requests.slice(before);
      const sync = calls.filter((request) => request.path === '/api/v1/endpoints/sync');
      expect(sync).toHaveLength(1);
      expect((sync[0]?.body as { endpoints: unknown[] } | undefined)?.endpoints).toHaveLength(300);
      expect(calls.filter((request) => request.method === 'POST' && request.path === '/api/v1/endpoints')).toHaveLength(2);
      expect(hub.endpointsOf('crowded').size).toBe(302);
    });

    test('a marketplace without published endpoints is not touched and answers []', async () => {
      const owner = await t.user('lonely');
      const lonely = await connectMarketplace(t, owner, hub, 'lonely');
      const before = hub.requests.length;
      const response = await send({ method: 'POST', url: '/api/v1/endpoints/sync', token: owner.token, payload: {} });
      expect(response.json()).toEqual({ [lonely.id]: [] });
      expect(hub.requests.length).toBe(before);
    });

    test('sync validates (422), needs credentials (401), and does not see other tenants’ marketplaces (404)', async () => {
      expect(
        issueLocs(await send({ method: 'POST', url: '/api/v1/endpoints/sync', token: alice.token, payload: { marketplace_ids: ['x'] } })),
      ).toEqual(['body.marketplace_ids.0']);
      expect((await send({ method: 'POST', url: '/api/v1/endpoints/sync' })).statusCode).toBe(401);
      const foreign = await send({
        method: 'POST',
        url: '/api/v1/endpoints/sync',
        token: mallory.token,
        payload: { marketplace_ids: [market.id] },
      });
      expect(foreign.statusCode).toBe(404);
    });

    test('a hub failure during sync is an error naming the marketplace', async () => {
      hub.failWith(503);
      try {
        const response = await send({
          method: 'POST',
          url: '/api/v1/endpoints/sync',
          token: alice.token,
          payload: { marketplace_ids: [market.id] },
        });
        expect(response.statusCode).toBe(503);
        expect(response.json().detail).toContain(`Marketplace '${market.name}'`);
      } finally {
        hub.failWith(undefined);
      }
    });

    test('an endpoint named "sync" keeps its own publish and query routes', async () => {
      await summaryEndpoint('sync');
      const response = await publish('sync', { marketplace_ids: [market.id] });
      expect(response.json()).toMatchObject({ endpoint_slug: 'sync', results: [{ success: true }] });
      expect((await query('sync', await hub.mintToken('carol@consumers.example', 'alice'))).statusCode).toBe(200);
      expect((await send({ method: 'GET', url: '/api/v1/endpoints/sync', token: alice.token })).json().slug).toBe('sync');
    });
  });

  describe('public URL', () => {
    const patchUrl = (publicUrl: string, tenant = alice.tenant) =>
      send({
        method: 'PATCH',
        url: '/api/v1/settings/public-url',
        token: ADMIN_KEY,
        headers: { 'x-tenant-name': tenant },
        payload: { public_url: publicUrl },
      });
    const storedUrl = async () =>
      (
        await send({ method: 'GET', url: '/api/v1/settings/public-url', token: ADMIN_KEY, headers: { 'x-tenant-name': alice.tenant } })
      ).json().public_url;

    test('is pushed to the default marketplace, stored, and followed by a sync', async () => {
      const before = hub.requests.length;
      const response = await patchUrl('https://alice.example.net/');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ public_url: 'https://alice.example.net', source: 'set' });
      expect(hub.domainOf('alice')).toBe('https://alice.example.net');
      const calls = hub.requests.slice(before).map((request) => `${request.method} ${request.path}`);
      // This hub (2026-07) has no satellite registry (404): the URL is the account's domain, as before; alice's
      // other active marketplace (alice-two) is asked for its registry too, and has none either.
      expect(calls).toEqual(['POST /api/v1/satellites', 'PUT /api/v1/users/me', 'POST /api/v1/satellites', 'POST /api/v1/endpoints/sync']);
      expect(await storedUrl()).toBe('https://alice.example.net');
    });

    test('is refused, and left as it was, when the hub refuses it or cannot be reached', async () => {
      await patchUrl('https://kept.example.net');
      hub.refuseDomains('Invalid domain format');
      try {
        const refused = await patchUrl('https://refused.example.net');
        expect(refused.statusCode).toBe(502);
        expect(refused.json().detail).toBe(`Marketplace '${market.name}' refused to set the public URL (400): Invalid domain format`);
      } finally {
        hub.refuseDomains(undefined);
      }
      await hub.down();
      try {
        expect((await patchUrl('https://unreachable.example.net')).statusCode).toBe(503);
      } finally {
        await hub.up();
      }
      expect(await storedUrl()).toBe('https://kept.example.net');
      expect(hub.domainOf('alice')).toBe('https://kept.example.net');
    });
  });

  test('no password or hub session token ever appears in a response or a log line', () => {
    expect(responses.length).toBeGreaterThan(50);
    expect(logs.lines.length).toBeGreaterThan(50);
    for (const text of [...responses, ...logs.lines]) {
      expect(text).not.toContain(market.password);
      expect(text).not.toContain('bob-wrong-password');
      expect(text).not.toContain('patcher-new-password');
      expect(text).not.toContain('hub-access-');
      expect(text).not.toContain('hub-refresh-');
    }
  });
});
