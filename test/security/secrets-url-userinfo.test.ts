import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SECRET_MASK } from '../../src/security/secret-config.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';

const PASSWORD = 's3cret-in-a-url';
const OTHER_PASSWORD = 'hunter2-in-a-mirror';

describe("a password in a URL's user-info is masked and encrypted", () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user();
  });
  afterAll(() => t.close());

  const tenant = () => t.tenant(owner);
  const get = (url: string) => t.request({ method: 'GET', url, token: owner.token });

  test('models: the base_url, a URL in an array and one nested deeper are shown as scheme://********@host/...', async () => {
    const model = await createModel(t, owner, 'url-secrets', {
      base_url: `http://alice:${PASSWORD}@127.0.0.1:9/v1`,
      mirrors: [`https://bob:${OTHER_PASSWORD}@mirror.example/v1?region=eu`, 'https://no-credentials.example/v1'],
      cache: { url: `redis://:${PASSWORD}@cache.internal:6379/0` },
    });
    const expected = {
      base_url: `http://${SECRET_MASK}@127.0.0.1:9/v1`,
      mirrors: [`https://${SECRET_MASK}@mirror.example/v1?region=eu`, 'https://no-credentials.example/v1'],
      cache: { url: `redis://${SECRET_MASK}@cache.internal:6379/0` },
    };
    expect(model.configuration).toMatchObject(expected);
    const endpoint = await createEndpoint(t, owner, { slug: 'url-secrets', model_id: model.id, response_type: 'summary' });
    const views = [await get(`/api/v1/models/${model.id}`), await get('/api/v1/models/'), await get(`/api/v1/endpoints/${endpoint.slug}`)];
    expect(views[0]?.json().configuration).toMatchObject(expected);
    expect(views[2]?.json().model.configuration).toMatchObject(expected);
    for (const text of [JSON.stringify(model), ...views.map((view) => view.body)]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(OTHER_PASSWORD);
      expect(text).not.toContain('alice');
    }

    // At rest the user-info is ciphertext; the host stays readable.
    const row = await t.services.database.db.selectFrom('models').selectAll().where('id', '=', model.id).executeTakeFirstOrThrow();
    for (const secret of [PASSWORD, OTHER_PASSWORD, 'alice:']) expect(row.configuration).not.toContain(secret);
    expect(JSON.parse(row.configuration).base_url).toMatch(/^http:\/\/enc%3Av1%3A[^@/]+@127\.0\.0\.1:9\/v1$/);

    const opened = await t.services.models.openConfiguration(await tenant(), model.id);
    expect(opened.configuration).toMatchObject({
      base_url: `http://alice:${PASSWORD}@127.0.0.1:9/v1`,
      mirrors: [`https://bob:${OTHER_PASSWORD}@mirror.example/v1?region=eu`, 'https://no-credentials.example/v1'],
      cache: { url: `redis://:${PASSWORD}@cache.internal:6379/0` },
    });
  });

  test('datasets: an embedder base_url with user-info', async () => {
    const folder = join(t.dataDir, 'url-secrets');
    mkdirSync(folder, { recursive: true });
    const base_url = `http://embed:${PASSWORD}@127.0.0.1:9/v1`;
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: owner.token,
      payload: {
        name: 'url-secrets',
        dtype: 'local_file',
        configuration: { ingestionPath: folder, embedder: 'openai:text-embedding-3-small', base_url },
      },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().configuration.base_url).toBe(`http://${SECRET_MASK}@127.0.0.1:9/v1`);
    expect(created.body).not.toContain(PASSWORD);
    const row = await t.services.database.db
      .selectFrom('datasets')
      .selectAll()
      .where('id', '=', created.json().id)
      .executeTakeFirstOrThrow();
    expect(row.configuration).not.toContain(PASSWORD);
    expect((await t.services.datasets.openConfiguration(await tenant(), created.json().id)).base_url).toBe(base_url);
  });

  test('a URL with the mask as its user-info, with nothing stored behind it, is a 422', async () => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'masked-url', dtype: 'openai', configuration: { model: 'm', base_url: `http://${SECRET_MASK}@127.0.0.1:9/v1` } },
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([{ loc: ['body', 'configuration', 'base_url'], msg: expect.any(String), type: 'value_error' }]);
  });
});
