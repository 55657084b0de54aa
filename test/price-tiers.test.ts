import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { globAsRegex, payerPatternKind, publishedAppliedTo, specificity } from '../src/policies/price-tiers.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { createDataset, createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { connectMarketplace } from './helpers/hub.ts';

/**
 * Who pays which price (API-CONTRACT 10.3 points 8 and 9): `applied_to` entries as syft-space writes them
 * (e-mail globs, exact addresses, regular expressions), the most specific tier winning, and prices published
 * so that SyftHub shows them (the hub shows only policies naming `"*"` or the viewer's exact address).
 */

const RECIPIENT = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';

describe('applied_to entries', () => {
  test('each entry is read as an address, a regular expression, a glob or a literal', () => {
    expect(payerPatternKind('bob@example.com')).toBe('email');
    expect(payerPatternKind('Bob+news@Example.com')).toBe('email');
    expect(payerPatternKind('.*')).toBe('regex');
    expect(payerPatternKind('.*@example\\.org')).toBe('regex');
    expect(payerPatternKind('(alice|bob)@example.com')).toBe('regex');
    expect(payerPatternKind('*')).toBe('glob');
    expect(payerPatternKind('*@example.com')).toBe('glob');
    expect(payerPatternKind('bo?@example.com')).toBe('glob');
    expect(payerPatternKind('admin@localhost!')).toBe('literal');
  });

  test('a glob means what it says: * any run, ? one character, the rest literal (dots are dots)', () => {
    expect(globAsRegex('*@example.com')).toBe('.*@example\\.com');
    expect(globAsRegex('bo?@a-b.org')).toBe('bo.@a-b\\.org');
  });

  test('specificity: an address its length + 100, a glob its literal characters minus 2 per *, a regex 0', () => {
    expect(specificity('bob@example.com')).toBe(115);
    expect(specificity('*@example.com')).toBe(10);
    expect(specificity('*')).toBe(-2);
    expect(specificity('bo?@example.com')).toBe(14);
    expect(specificity('.*')).toBe(0);
  });

  test('published: exact addresses as they are in lower case, anything else as one "*"', () => {
    expect(publishedAppliedTo(['Bob@Example.com', '*@example.com', '.*@partner\\.example', 'carol@example.com'])).toEqual([
      'bob@example.com',
      '*',
      'carol@example.com',
    ]);
    expect(publishedAppliedTo(['.*'])).toEqual(['*']);
  });
});

describe('price tiers through the API', () => {
  let t: TestApp;
  let owner: TestUser;
  let model: FakeOpenAIServer;
  let hub: FakeSyftHub;
  let modelId: string;

  const policy = (endpoint_id: string, configuration: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: '/api/v1/policies/',
      token: owner.token,
      payload: { name: 'p', policy_type: 'mpp', endpoint_id, configuration },
    });

  /** The price a caller is asked (402) or the entry it gets, asked with the admin key as `sender`. */
  const askAs = async (slug: string, user: TestUser | 'admin') =>
    t.request({
      method: 'POST',
      url: `/api/v1/endpoints/${slug}/query`,
      token: user === 'admin' ? ADMIN_KEY : user.token,
      headers: user === 'admin' ? { 'x-tenant-name': owner.tenant } : {},
      payload: { messages: 'hello' },
    });

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('tierowner');
    model = startFakeOpenAI();
    hub = await startFakeSyftHub();
    modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: model.url })).id;
    const set = await t.request({
      method: 'POST',
      url: '/api/v1/settings/wallet',
      token: owner.token,
      payload: { wallet_address: RECIPIENT, testnet: true, rpc_url: 'http://127.0.0.1:9' },
    });
    expect(set.statusCode).toBe(200);
  });

  afterAll(async () => {
    await t.close();
    await model.close();
    await hub.close();
  });

  test("syft-space's entries are accepted: '*', an e-mail glob, an exact address; the default is '*'", async () => {
    const endpoint = await createEndpoint(t, owner, { name: 'globs', slug: 'globs', model_id: modelId, response_type: 'summary' });
    for (const applied_to of [['*'], ['*@example.com'], ['bo?@example.com'], ['bob@example.com']]) {
      const response = await policy(endpoint.id, { price: 0.05, applied_to });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration.applied_to).toEqual(applied_to);
    }
    expect((await policy(endpoint.id, { price: 0.05 })).json().configuration.applied_to).toEqual(['*']);
    // A regular expression still has to compile.
    expect(issueLocs(await policy(endpoint.id, { price: 0.05, applied_to: ['*', '(oops'] }))).toEqual(['body.configuration.applied_to.1']);
  });

  test('the most specific tier wins, whatever order the policies were created in', async () => {
    // Created most general first, then most specific: the first-created rule would charge everyone $0.05.
    const endpoint = await createEndpoint(t, owner, { name: 'tiers', slug: 'tiers', model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.05, applied_to: ['*'] } });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.03, applied_to: ['.*'] } });
    await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'mpp',
      configuration: { price: 0.02, applied_to: ['*@localhost'] },
    });
    await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'mpp',
      configuration: { price: 0.01, applied_to: [owner.email.toUpperCase()] },
    });
    // The owner's exact address (length + 100) beats every pattern.
    expect((await askAs('tiers', owner)).json().detail).toBe('Payment of $0.01 required to query this endpoint');
    // admin@localhost: the glob *@localhost (10 - 2 = 8) beats the regex .* (0) and * (-2).
    expect((await askAs('tiers', 'admin')).json().detail).toBe('Payment of $0.02 required to query this endpoint');
  });

  test('between equally specific tiers the lower price wins', async () => {
    const endpoint = await createEndpoint(t, owner, { name: 'ties', slug: 'ties', model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.05, applied_to: ['.*'] } });
    await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'mpp',
      configuration: { price: 0.04, applied_to: ['.*@localhost'] },
    });
    expect((await askAs('ties', 'admin')).json().detail).toBe('Payment of $0.04 required to query this endpoint');
  });

  test('a caller no entry matches: 403 NO_PRICING_TIER', async () => {
    const endpoint = await createEndpoint(t, owner, { name: 'members', slug: 'members', model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'mpp',
      configuration: { price: 0.05, applied_to: ['*@members.example'] },
    });
    const response = await askAs('members', owner);
    expect(response.statusCode).toBe(403);
    expect(response.json().policy_metadata.entries[0].reason_code).toBe('NO_PRICING_TIER');
  });

  test('published prices say "*" or exact addresses, so the hub shows each of them', async () => {
    await connectMarketplace(t, owner, hub, 'tierowner');
    const endpoint = await createEndpoint(t, owner, { name: 'shown', slug: 'shown', model_id: modelId, response_type: 'summary' });
    await createPolicy(t, owner, {
      name: 'everyone',
      endpoint_id: endpoint.id,
      policy_type: 'mpp',
      configuration: { price: 0.05, applied_to: ['.*'] },
    });
    await createPolicy(t, owner, {
      name: 'partners',
      endpoint_id: endpoint.id,
      policy_type: 'mpp',
      configuration: { price: 0.02, applied_to: ['*@partner.example', 'Bob@Example.com'] },
    });
    const published = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/shown/publish',
      token: owner.token,
      payload: { publish_to_all_marketplaces: true },
    });
    expect(published.statusCode).toBe(200);
    const policies = hub.endpointsOf('tierowner').get('shown')?.policies as { description: string; config: { applied_to: string[] } }[];
    expect(policies.map((item) => [item.description, item.config.applied_to])).toEqual([
      ['everyone', ['*']],
      ['partners', ['*', 'bob@example.com']],
    ]);
    // knode keeps what the owner wrote.
    const listed = await t.request({ method: 'GET', url: `/api/v1/policies/?endpoint_id=${endpoint.id}`, token: owner.token });
    expect(listed.json().map((item: { configuration: { applied_to: string[] } }) => item.configuration.applied_to)).toEqual([
      ['.*'],
      ['*@partner.example', 'Bob@Example.com'],
    ]);
  });

  test('a price per document on an endpoint that never searches is refused (422), on create and on update', async () => {
    const chat = await createEndpoint(t, owner, { name: 'chat', slug: 'chat-only', model_id: modelId, response_type: 'summary' });
    const created = await policy(chat.id, { price: 0.01, unit_type: 'document' });
    expect(issueLocs(created)).toEqual(['body.configuration.unit_type']);
    expect(created.json().detail[0].msg).toContain('searches a dataset');
    const perRequest = await createPolicy(t, owner, { endpoint_id: chat.id, policy_type: 'mpp', configuration: { price: 0.01 } });
    const updated = await t.request({
      method: 'PATCH',
      url: `/api/v1/policies/${perRequest.id}`,
      token: owner.token,
      payload: { configuration: { price: 0.01, unit_type: 'document' } },
    });
    expect(issueLocs(updated)).toEqual(['body.configuration.unit_type']);
    const kept = await t.request({ method: 'GET', url: `/api/v1/policies/${perRequest.id}`, token: owner.token });
    expect(kept.json().configuration.unit_type).toBe('request');

    // An endpoint that searches takes it.
    const dataset = await createDataset(t, owner, 'priced-docs');
    const search = await createEndpoint(t, owner, { name: 'search', slug: 'search-docs', dataset_id: dataset.id, response_type: 'raw' });
    expect((await policy(search.id, { price: 0.01, unit_type: 'document' })).statusCode).toBe(201);
  });
});
