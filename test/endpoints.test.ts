import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { createDataset, createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';

describe('endpoints', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let dataset: { id: string };
  let model: { id: string };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('owner');
    stranger = await t.user('stranger');
    dataset = await createDataset(t, owner);
    model = await createModel(t, owner);
  });
  afterAll(() => t.close());

  const create = (payload: object, user = owner) => t.request({ method: 'POST', url: '/api/v1/endpoints/', token: user.token, payload });

  test('create answers 201 with the created endpoint and lower-cases the slug', async () => {
    const response = await create({
      name: 'Papers',
      slug: 'My-Papers',
      dataset_id: dataset.id,
      model_id: model.id,
      tags: ' ml , papers ,, ',
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({
      id: expect.any(String),
      name: 'Papers',
      slug: 'my-papers',
      description: '',
      summary: '',
      response_type: 'both',
      published: false,
      tags: 'ml,papers',
      model_id: model.id,
      dataset_id: dataset.id,
      published_to: [],
      generation_defaults: {},
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
  });

  test('create keeps the given response type, published flag, summary and description', async () => {
    const response = await create({
      name: 'Raw',
      slug: 'raw-one',
      dataset_id: dataset.id,
      response_type: 'raw',
      published: true,
      summary: 's',
      description: '# d',
    });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toMatchObject({ response_type: 'raw', published: true, summary: 's', description: '# d', model_id: null });
  });

  test('create needs a dataset or a model', async () => {
    const response = await create({ name: 'Empty', slug: 'empty-one' });
    expect(issueLocs(response)).toEqual(['body']);
    const nulls = await create({ name: 'Empty', slug: 'empty-two', dataset_id: null, model_id: null });
    expect(issueLocs(nulls)).toEqual(['body']);
  });

  test('create refuses a response type with nothing to answer with', async () => {
    expect(issueLocs(await create({ name: 'x', slug: 'raw-model', model_id: model.id, response_type: 'raw' }))).toEqual([
      'body.response_type',
    ]);
    expect(issueLocs(await create({ name: 'x', slug: 'sum-dataset', dataset_id: dataset.id, response_type: 'summary' }))).toEqual([
      'body.response_type',
    ]);
  });

  test('create validates the slug: length 3 to 64 and the hyphen rules', async () => {
    for (const slug of ['ab', 'a'.repeat(65), '-abc', 'abc-', 'a--b', 'a_b', 'a b', 'ünï']) {
      const response = await create({ name: 'x', slug, dataset_id: dataset.id });
      expect(issueLocs(response)).toEqual(['body.slug']);
    }
    expect((await create({ name: 'x', slug: 'a'.repeat(64), dataset_id: dataset.id })).statusCode).toBe(201);
    expect((await create({ name: 'x', slug: 'a1-b2-c3', dataset_id: dataset.id })).statusCode).toBe(201);
  });

  test('create validates every field type and reports all problems at once', async () => {
    const response = await create({
      name: 5,
      slug: 'types-one',
      dataset_id: 'not-a-uuid',
      response_type: 'everything',
      published: 'yes',
      tags: [],
    });
    expect(issueLocs(response).sort()).toEqual(['body.dataset_id', 'body.name', 'body.published', 'body.response_type', 'body.tags']);
    expect(issueLocs(await create({ slug: 'no-name', dataset_id: dataset.id }))).toEqual(['body.name']);
    expect(issueLocs(await create({ name: 'x'.repeat(201), slug: 'long-name', dataset_id: dataset.id }))).toEqual(['body.name']);
  });

  test('create answers 404 for a dataset or model that does not exist or belongs to another tenant', async () => {
    const missing = await create({ name: 'x', slug: 'missing-ds', dataset_id: crypto.randomUUID() });
    expect(missing.statusCode).toBe(404);
    const foreign = await create({ name: 'x', slug: 'foreign-model', model_id: model.id }, stranger);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().detail).toContain('Model');
  });

  test('a duplicate slug in the same tenant is 409; another tenant may use it', async () => {
    await createEndpoint(t, owner, { slug: 'shared-slug', dataset_id: dataset.id });
    const duplicate = await create({ name: 'x', slug: 'SHARED-slug', dataset_id: dataset.id });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().detail).toContain('shared-slug');
    const strangerModel = await createModel(t, stranger);
    expect((await create({ name: 'x', slug: 'shared-slug', model_id: strangerModel.id }, stranger)).statusCode).toBe(201);
  });

  test('list embeds the model and dataset views with secrets masked', async () => {
    await createEndpoint(t, owner, { slug: 'listed', dataset_id: dataset.id, model_id: model.id });
    const response = await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: owner.token });
    expect(response.statusCode).toBe(200);
    const listed = response.json().find((item: { slug: string }) => item.slug === 'listed');
    expect(Object.keys(listed).sort()).toEqual(
      [
        'archived',
        'archived_at',
        'created_at',
        'dataset',
        'generation_defaults',
        'id',
        'model',
        'name',
        'published',
        'published_to',
        'response_type',
        'slug',
        'summary',
        'tags',
      ].sort(),
    );
    expect(listed.model).toEqual({
      id: model.id,
      name: 'gpt',
      dtype: 'openai',
      configuration: expect.objectContaining({ api_key: '********', model: 'gpt-4o-mini' }),
    });
    expect(listed.dataset).toMatchObject({ id: dataset.id, name: 'docs', summary: '', dtype: 'local_file' });
    expect(response.body).not.toContain('sk-test-secret');
  });

  test('list paginates when asked', async () => {
    const all = (await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: owner.token })).json();
    const page = await t.request({ method: 'GET', url: '/api/v1/endpoints/?skip=1&limit=2', token: owner.token });
    expect(page.json()).toEqual({ items: all.slice(1, 3), total: all.length, skip: 1, limit: 2 });
    expect(issueLocs(await t.request({ method: 'GET', url: '/api/v1/endpoints/?limit=1001', token: owner.token }))).toEqual([
      'query.limit',
    ]);
    expect(issueLocs(await t.request({ method: 'GET', url: '/api/v1/endpoints/?skip=-1', token: owner.token }))).toEqual(['query.skip']);
  });

  test('detail shows the policies, model and dataset', async () => {
    const endpoint = await createEndpoint(t, owner, { slug: 'detailed', dataset_id: dataset.id });
    const policy = await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'rate_limit', configuration: { rate: '10/m' } });
    const response = await t.request({ method: 'GET', url: '/api/v1/endpoints/detailed', token: owner.token });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.policies).toEqual([{ id: policy.id, name: 'policy', policy_type: 'rate_limit', configuration: { rate: '10/m' } }]);
    expect(body.model).toBeNull();
    expect(body.dataset.id).toBe(dataset.id);
    expect(body.updated_at).toEqual(expect.any(String));
  });

  test('PATCH changes name, summary and description only', async () => {
    await createEndpoint(t, owner, { slug: 'patched', dataset_id: dataset.id });
    const response = await t.request({
      method: 'PATCH',
      url: '/api/v1/endpoints/patched',
      token: owner.token,
      payload: { name: 'New', summary: 'S', description: 'D', unknown_field: 1 },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ name: 'New', summary: 'S', description: 'D', slug: 'patched', policies: [] });
  });

  test('PATCH of a field that cannot change is 422 immutable_field and changes nothing', async () => {
    await createEndpoint(t, owner, { slug: 'frozen', dataset_id: dataset.id });
    for (const field of ['slug', 'dataset_id', 'model_id', 'response_type', 'published', 'tags']) {
      const response = await t.request({
        method: 'PATCH',
        url: '/api/v1/endpoints/frozen',
        token: owner.token,
        payload: { name: 'Changed', [field]: 'x' },
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().detail).toEqual([{ loc: ['body', field], msg: expect.any(String), type: 'immutable_field' }]);
    }
    const after = await t.request({ method: 'GET', url: '/api/v1/endpoints/frozen', token: owner.token });
    expect(after.json().name).toBe('Endpoint');
  });

  test('PATCH needs at least one field', async () => {
    await createEndpoint(t, owner, { slug: 'needs-one', dataset_id: dataset.id });
    expect(issueLocs(await t.request({ method: 'PATCH', url: '/api/v1/endpoints/needs-one', token: owner.token, payload: {} }))).toEqual([
      'body',
    ]);
  });

  test('DELETE removes the endpoint and its policies but keeps the dataset and model', async () => {
    const endpoint = await createEndpoint(t, owner, { slug: 'doomed', dataset_id: dataset.id, model_id: model.id });
    const policy = await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'access',
      configuration: { mode: 'allow', patterns: ['a@b.c'] },
    });
    const response = await t.request({ method: 'DELETE', url: '/api/v1/endpoints/doomed', token: owner.token });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ message: expect.stringContaining('doomed') });
    expect((await t.request({ method: 'GET', url: '/api/v1/endpoints/doomed', token: owner.token })).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: `/api/v1/policies/${policy.id}`, token: owner.token })).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: owner.token })).statusCode).toBe(200);
    expect((await t.request({ method: 'GET', url: `/api/v1/models/${model.id}`, token: owner.token })).statusCode).toBe(200);
  });

  test('every endpoint route answers 401 without credentials and with bad ones', async () => {
    await createEndpoint(t, owner, { slug: 'guarded', dataset_id: dataset.id });
    const routes = [
      { method: 'POST' as const, url: '/api/v1/endpoints/', payload: { name: 'x', slug: 'xyz', dataset_id: dataset.id } },
      { method: 'GET' as const, url: '/api/v1/endpoints/' },
      { method: 'GET' as const, url: '/api/v1/endpoints/guarded' },
      { method: 'PATCH' as const, url: '/api/v1/endpoints/guarded', payload: { name: 'x' } },
      { method: 'DELETE' as const, url: '/api/v1/endpoints/guarded' },
    ];
    for (const route of routes) {
      const missing = await t.request(route);
      expect(missing.statusCode).toBe(401);
      expect(missing.json()).toEqual({ detail: 'Not authenticated' });
      const bad = await t.request({ ...route, token: 'not.a.token' });
      expect(bad.statusCode).toBe(401);
      expect(bad.json()).toEqual({ detail: 'Could not validate credentials' });
    }
  });

  test("does not show, change or delete another tenant's endpoint", async () => {
    await createEndpoint(t, owner, { slug: 'private-one', dataset_id: dataset.id });
    const token = stranger.token;
    expect((await t.request({ method: 'GET', url: '/api/v1/endpoints/private-one', token })).statusCode).toBe(404);
    expect((await t.request({ method: 'PATCH', url: '/api/v1/endpoints/private-one', token, payload: { name: 'pwned' } })).statusCode).toBe(
      404,
    );
    expect((await t.request({ method: 'DELETE', url: '/api/v1/endpoints/private-one', token })).statusCode).toBe(404);
    const list = (await t.request({ method: 'GET', url: '/api/v1/endpoints/', token })).json();
    expect(list.map((item: { slug: string }) => item.slug)).not.toContain('private-one');
    expect((await t.request({ method: 'GET', url: '/api/v1/endpoints/private-one', token: owner.token })).json().name).toBe('Endpoint');
  });
});
