import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SECRET_MASK } from '../../src/security/secret-config.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createModel } from '../helpers/fixtures.ts';

/** A secret of every kind the masking knows: by key name, nested, inside arrays, in a URL's user-info. */
const original = {
  model: 'gpt-4o-mini',
  api_key: 'sk-top-level-kept',
  base_url: 'http://svc:url-password-kept@127.0.0.1:9/v1',
  auth: { client_secret: 'nested-secret-kept', region: 'eu' },
  extra_headers: [
    { name: 'X-Api-Key', api_key: 'header-key-kept' },
    { name: 'X-Other', value: 'plain' },
  ],
  mirrors: ['https://m:mirror-password-kept@mirror.example/v1'],
};
const SECRETS = ['sk-top-level-kept', 'url-password-kept', 'nested-secret-kept', 'header-key-kept', 'mirror-password-kept'];

describe('sending the masked values back in a PATCH keeps the stored secrets', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user();
  });
  afterAll(() => t.close());

  const tenant = () => t.tenant(owner);
  const opened = async (id: string) => (await t.services.models.openConfiguration(await tenant(), id)).configuration;
  const shown = async (id: string) =>
    (await t.request({ method: 'GET', url: `/api/v1/models/${id}`, token: owner.token })).json().configuration;
  const patch = (id: string, configuration: Record<string, unknown>) =>
    t.request({ method: 'PATCH', url: `/api/v1/models/${id}`, token: owner.token, payload: { configuration } });

  test('what a GET showed, sent back with one change, changes only that', async () => {
    const model = await createModel(t, owner, 'round-trip', original);
    const configuration = await shown(model.id);
    for (const secret of SECRETS) expect(JSON.stringify(configuration)).not.toContain(secret);

    const response = await patch(model.id, { ...configuration, model: 'gpt-4o' });
    expect(response.statusCode).toBe(200);
    expect(response.json().configuration).toEqual({ ...configuration, model: 'gpt-4o' });
    expect(await opened(model.id)).toMatchObject({ ...original, model: 'gpt-4o' });
    const row = await t.services.database.db.selectFrom('models').selectAll().where('id', '=', model.id).executeTakeFirstOrThrow();
    for (const secret of SECRETS) expect(row.configuration).not.toContain(secret);
  });

  test('a new value in place of one mask replaces only that secret', async () => {
    const model = await createModel(t, owner, 'replace-one', original);
    const configuration = await shown(model.id);
    const headers = configuration.extra_headers as Record<string, unknown>[];
    const response = await patch(model.id, { ...configuration, extra_headers: [{ ...headers[0], api_key: 'header-key-new' }, headers[1]] });
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toContain('header-key-new');
    const now = await opened(model.id);
    expect(now.extra_headers).toEqual([
      { name: 'X-Api-Key', api_key: 'header-key-new' },
      { name: 'X-Other', value: 'plain' },
    ]);
    expect(now).toMatchObject({ api_key: original.api_key, base_url: original.base_url, auth: original.auth, mirrors: original.mirrors });
  });

  test('a masked URL pointed at another host does not take the stored credential there', async () => {
    const model = await createModel(t, owner, 'moved-host', original);
    const configuration = await shown(model.id);
    const moved = String(configuration.base_url).replace('127.0.0.1:9', 'attacker.example');
    const response = await patch(model.id, { ...configuration, base_url: moved });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([{ loc: ['body', 'configuration', 'base_url'], msg: expect.any(String), type: 'value_error' }]);
    expect((await opened(model.id)).base_url).toBe(original.base_url);
    // The path may change: the credential still goes to the host it was given for.
    const newPath = await patch(model.id, { ...configuration, base_url: String(configuration.base_url).replace('/v1', '/v2') });
    expect(newPath.statusCode).toBe(200);
    expect((await opened(model.id)).base_url).toBe('http://svc:url-password-kept@127.0.0.1:9/v2');
  });

  test('a mask where nothing is stored (a new array item) is a 422, not a silently dropped secret', async () => {
    const model = await createModel(t, owner, 'new-item', original);
    const configuration = await shown(model.id);
    const headers = configuration.extra_headers as Record<string, unknown>[];
    const response = await patch(model.id, { ...configuration, extra_headers: [...headers, { name: 'X-New', api_key: SECRET_MASK }] });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([
      { loc: ['body', 'configuration', 'extra_headers', 2, 'api_key'], msg: expect.any(String), type: 'value_error' },
    ]);
    expect(await opened(model.id)).toMatchObject(original);
  });
});
