import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SECRET_MASK } from '../../src/security/secret-config.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';

const HEADER_KEY = 'sk-inside-an-array-1';
const HEADER_TOKEN = 'tok-inside-an-array-2';
const NESTED_PASSWORD = 'pw-array-in-array-3';

/** Secrets where a key-by-key walk that skips arrays never looks. */
const inArrays = {
  extra_headers: [
    { name: 'X-Api-Key', api_key: HEADER_KEY },
    { name: 'X-Trace', value: 'visible' },
    { name: 'X-Token', accessToken: HEADER_TOKEN },
  ],
  upstreams: [[{ host: 'a.example', password: NESTED_PASSWORD }]],
};

const masked = {
  extra_headers: [
    { name: 'X-Api-Key', api_key: SECRET_MASK },
    { name: 'X-Trace', value: 'visible' },
    { name: 'X-Token', accessToken: SECRET_MASK },
  ],
  upstreams: [[{ host: 'a.example', password: SECRET_MASK }]],
};

const SECRETS = [HEADER_KEY, HEADER_TOKEN, NESTED_PASSWORD];

describe('an api_key inside an array of headers is masked in responses and encrypted at rest', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user();
  });
  afterAll(() => t.close());

  const tenant = () => t.tenant(owner);
  const get = (url: string) => t.request({ method: 'GET', url, token: owner.token });

  function expectNoSecret(...texts: string[]): void {
    for (const text of texts) for (const secret of SECRETS) expect(text).not.toContain(secret);
  }

  test('models: create, detail, list and endpoint views show the mask; the row holds ciphertext', async () => {
    const model = await createModel(t, owner, 'array-secrets', inArrays);
    expect(model.configuration).toMatchObject(masked);
    const endpoint = await createEndpoint(t, owner, { slug: 'array-secrets', model_id: model.id, response_type: 'summary' });
    const views = [await get(`/api/v1/models/${model.id}`), await get('/api/v1/models/'), await get(`/api/v1/endpoints/${endpoint.slug}`)];
    expect(views[0]?.json().configuration).toMatchObject(masked);
    expect(views[2]?.json().model.configuration).toMatchObject(masked);
    expectNoSecret(JSON.stringify(model), ...views.map((view) => view.body));

    const row = await t.services.database.db.selectFrom('models').selectAll().where('id', '=', model.id).executeTakeFirstOrThrow();
    expectNoSecret(row.configuration);
    const stored = JSON.parse(row.configuration);
    expect(stored.extra_headers[0].api_key).toStartWith('enc:');
    expect(stored.extra_headers[2].accessToken).toStartWith('enc:');
    expect(stored.upstreams[0][0].password).toStartWith('enc:');
    expect(stored.extra_headers[1]).toEqual({ name: 'X-Trace', value: 'visible' });

    const opened = await t.services.models.openConfiguration(await tenant(), model.id);
    expect(opened.configuration).toMatchObject(inArrays);
  });

  test('datasets: the same, for a dataset configuration', async () => {
    const folder = join(t.dataDir, 'array-secrets');
    mkdirSync(folder, { recursive: true });
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: owner.token,
      payload: { name: 'array-secrets', dtype: 'local_file', configuration: { ingestionPath: folder, ...inArrays } },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().configuration).toMatchObject(masked);
    const detail = await get(`/api/v1/datasets/${created.json().id}`);
    expect(detail.json().configuration).toMatchObject(masked);
    expectNoSecret(created.body, detail.body, (await get('/api/v1/datasets/')).body);

    const row = await t.services.database.db
      .selectFrom('datasets')
      .selectAll()
      .where('id', '=', created.json().id)
      .executeTakeFirstOrThrow();
    expectNoSecret(row.configuration);
    expect(await t.services.datasets.openConfiguration(await tenant(), created.json().id)).toMatchObject(inArrays);
  });

  test('the mask inside an array, with nothing stored behind it, is a 422 at its place', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: {
        name: 'mask-in-array',
        dtype: 'openai',
        configuration: { model: 'm', extra_headers: [{ name: 'X' }, { api_key: SECRET_MASK }] },
      },
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([
      { loc: ['body', 'configuration', 'extra_headers', 1, 'api_key'], msg: expect.any(String), type: 'value_error' },
    ]);
  });
});
