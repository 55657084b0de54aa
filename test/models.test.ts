import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { coreCount } from '../src/util/cores.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, validationIssues } from './helpers/app.ts';
import { ISO_UTC, UNKNOWN_ID } from './helpers/constants.ts';
import { createEndpoint, createModel } from './helpers/fixtures.ts';

const MASK = '********';

describe('models', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let files: string;

  beforeAll(async () => {
    t = await createTestApp();
    alice = await t.user();
    bob = await t.user();
    files = join(t.dataDir, 'model-files');
    mkdirSync(files, { recursive: true });
  });
  afterAll(() => t.close());

  const post = (user: TestUser | undefined, payload: unknown) =>
    t.request({ method: 'POST', url: '/api/v1/models/', token: user?.token, payload: payload as object });
  const openai = (user: TestUser, configuration: Record<string, unknown>, name = 'gpt') =>
    post(user, { name, dtype: 'openai', configuration });
  const llama = (user: TestUser, configuration: Record<string, unknown>, name = 'local') =>
    post(user, { name, dtype: 'llama_cpp', configuration });
  const get = (user: TestUser, id: string) => t.request({ method: 'GET', url: `/api/v1/models/${id}`, token: user.token });
  const patch = (user: TestUser, id: string, payload: unknown) =>
    t.request({ method: 'PATCH', url: `/api/v1/models/${id}`, token: user.token, payload: payload as object });
  const tenantOf = (user: TestUser) =>
    t.services.database.db.selectFrom('tenants').selectAll().where('name', '=', user.tenant).executeTakeFirstOrThrow();
  const rawRow = (id: string) => t.services.database.db.selectFrom('models').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  /** A file with the given first bytes, standing in for a model file. */
  const file = (name: string, content: string | Buffer) => {
    const path = join(files, `${crypto.randomUUID().slice(0, 8)}-${name}`);
    writeFileSync(path, content);
    return path;
  };
  const gguf = () => file('model.gguf', Buffer.concat([Buffer.from('GGUF'), Buffer.from([3, 0, 0, 0]), Buffer.alloc(64)]));

  describe('openai', () => {
    test('creates an openai model with defaults filled in and the api_key masked', async () => {
      const response = await openai(alice, { model: 'gpt-4o-mini', api_key: 'sk-create-secret' }, 'GPT mini');
      expect(response.statusCode).toBe(201);
      expect(response.json()).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'GPT mini',
        dtype: 'openai',
        configuration: {
          model: 'gpt-4o-mini',
          base_url: 'https://api.openai.com/v1',
          api_key: MASK,
          timeout_ms: 60000,
          cost_per_1k_prompt_tokens: 0,
          cost_per_1k_completion_tokens: 0,
        },
        created_at: expect.stringMatching(ISO_UTC),
        updated_at: expect.stringMatching(ISO_UTC),
      });
      expect(response.body).not.toContain('sk-create-secret');
    });

    test('keeps the values that are given', async () => {
      const response = await openai(alice, {
        model: 'llama3',
        base_url: 'http://localhost:11434/v1',
        timeout_ms: 5000,
        system_prompt: 'Be brief.',
        cost_per_1k_prompt_tokens: 0.5,
        cost_per_1k_completion_tokens: 1.5,
      });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration).toMatchObject({
        model: 'llama3',
        base_url: 'http://localhost:11434/v1',
        timeout_ms: 5000,
        system_prompt: 'Be brief.',
        cost_per_1k_prompt_tokens: 0.5,
        cost_per_1k_completion_tokens: 1.5,
      });
    });

    test('an api_key is optional (local OpenAI-compatible servers)', async () => {
      const response = await openai(alice, { model: 'llama3', base_url: 'http://localhost:11434/v1' });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration.api_key).toBeUndefined();
    });

    test('refuses a configuration without model', async () => {
      const issues = validationIssues(await openai(alice, { api_key: 'sk-x' }));
      expect(issues.map((issue) => issue.loc.join('.'))).toEqual(['body.configuration.model']);
      expect(issues[0]?.type).toBe('missing');
      expect(issueLocs(await openai(alice, { model: '' }))).toEqual(['body.configuration.model']);
      expect(issueLocs(await openai(alice, { model: 42 }))).toEqual(['body.configuration.model']);
    });

    test('refuses a base_url that is not an http(s) URL', async () => {
      for (const base_url of ['ftp://example.com/v1', 'not a url', 'file:///etc/passwd', 42]) {
        expect(issueLocs(await openai(alice, { model: 'm', base_url }))).toEqual(['body.configuration.base_url']);
      }
    });

    test('refuses a bad timeout_ms', async () => {
      for (const timeout_ms of ['soon', -1, 1.5]) {
        expect(issueLocs(await openai(alice, { model: 'm', timeout_ms }))).toEqual(['body.configuration.timeout_ms']);
      }
    });

    test('refuses negative or non-numeric costs', async () => {
      expect(issueLocs(await openai(alice, { model: 'm', cost_per_1k_prompt_tokens: -0.01 }))).toEqual([
        'body.configuration.cost_per_1k_prompt_tokens',
      ]);
      expect(issueLocs(await openai(alice, { model: 'm', cost_per_1k_completion_tokens: -1 }))).toEqual([
        'body.configuration.cost_per_1k_completion_tokens',
      ]);
      expect(issueLocs(await openai(alice, { model: 'm', cost_per_1k_prompt_tokens: 'free' }))).toEqual([
        'body.configuration.cost_per_1k_prompt_tokens',
      ]);
    });

    test('reports every configuration problem at once', async () => {
      const locs = issueLocs(await openai(alice, { base_url: 'nope', timeout_ms: 'x', cost_per_1k_prompt_tokens: -1 }));
      expect(locs.sort()).toEqual(
        [
          'body.configuration.base_url',
          'body.configuration.cost_per_1k_prompt_tokens',
          'body.configuration.model',
          'body.configuration.timeout_ms',
        ].sort(),
      );
    });
  });

  describe('secrets', () => {
    test('the mask itself is refused as a new api_key', async () => {
      const response = await openai(alice, { model: 'm', api_key: MASK }, 'mask-as-key');
      expect(response.statusCode).toBe(422);
      expect(response.json().detail).toEqual([{ loc: ['body', 'configuration', 'api_key'], msg: expect.any(String), type: 'value_error' }]);
    });

    test('the api_key is masked in create, list and detail', async () => {
      const secret = 'sk-visible-nowhere-1';
      const created = await openai(alice, { model: 'm', api_key: secret }, 'masked');
      expect(created.json().configuration.api_key).toBe(MASK);
      const detail = await get(alice, created.json().id);
      expect(detail.json().configuration.api_key).toBe(MASK);
      const list = await t.request({ method: 'GET', url: '/api/v1/models/', token: alice.token });
      const item = list.json().find((model: { id: string }) => model.id === created.json().id);
      expect(item.configuration.api_key).toBe(MASK);
      for (const response of [created, detail, list]) expect(response.body).not.toContain(secret);
    });

    test('the api_key is masked in endpoint views', async () => {
      const secret = 'sk-endpoint-view-secret';
      const model = await createModel(t, alice, 'for-endpoint', { api_key: secret });
      await createEndpoint(t, alice, { slug: 'masked-model-endpoint', model_id: model.id, response_type: 'summary' });
      const list = await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: alice.token });
      const item = list.json().find((endpoint: { slug: string }) => endpoint.slug === 'masked-model-endpoint');
      expect(item.model.configuration.api_key).toBe(MASK);
      const detail = await t.request({ method: 'GET', url: '/api/v1/endpoints/masked-model-endpoint', token: alice.token });
      expect(detail.json().model.configuration.api_key).toBe(MASK);
      const patched = await t.request({
        method: 'PATCH',
        url: '/api/v1/endpoints/masked-model-endpoint',
        token: alice.token,
        payload: { summary: 's' },
      });
      expect(patched.json().model.configuration.api_key).toBe(MASK);
      for (const response of [list, detail, patched]) expect(response.body).not.toContain(secret);
    });

    test('the api_key is stored encrypted, never in clear', async () => {
      const secret = 'sk-at-rest-secret-42';
      const model = await createModel(t, alice, 'at-rest', { api_key: secret });
      const row = await rawRow(model.id);
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(JSON.parse(row.configuration).api_key).toStartWith('enc:');
      const opened = await t.services.models.openConfiguration(await tenantOf(alice), model.id);
      expect(opened.configuration.api_key).toBe(secret);
    });

    test('a PATCH that sends the mask back keeps the stored api_key', async () => {
      const model = await createModel(t, alice, 'keep-key', { api_key: 'sk-original-key' });
      const shown = (await get(alice, model.id)).json();
      const response = await patch(alice, model.id, { configuration: { ...shown.configuration, model: 'gpt-4o' } });
      expect(response.statusCode).toBe(200);
      expect(response.json().configuration).toMatchObject({ model: 'gpt-4o', api_key: MASK });
      const opened = await t.services.models.openConfiguration(await tenantOf(alice), model.id);
      expect(opened.configuration.api_key).toBe('sk-original-key');
      expect(opened.configuration.model).toBe('gpt-4o');
      expect((await rawRow(model.id)).configuration).not.toContain('sk-original-key');
    });

    test('a PATCH with a new api_key replaces the stored one, encrypted', async () => {
      const model = await createModel(t, alice, 'new-key', { api_key: 'sk-old-key' });
      const response = await patch(alice, model.id, { configuration: { model: 'gpt-4o-mini', api_key: 'sk-brand-new-key' } });
      expect(response.statusCode).toBe(200);
      expect(response.json().configuration.api_key).toBe(MASK);
      expect(response.body).not.toContain('sk-brand-new-key');
      const opened = await t.services.models.openConfiguration(await tenantOf(alice), model.id);
      expect(opened.configuration.api_key).toBe('sk-brand-new-key');
      const raw = (await rawRow(model.id)).configuration;
      expect(raw).not.toContain('sk-brand-new-key');
      expect(raw).not.toContain('sk-old-key');
    });
  });

  describe('llama_cpp', () => {
    test('creates a llama_cpp model from a GGUF file with threads defaulting to the core count', async () => {
      const path = gguf();
      const response = await llama(alice, { model_path: path });
      expect(response.statusCode).toBe(201);
      const body = response.json();
      expect(body.dtype).toBe('llama_cpp');
      expect(body.configuration).toMatchObject({
        model_path: path,
        threads: coreCount(),
        cost_per_1k_prompt_tokens: 0,
        cost_per_1k_completion_tokens: 0,
      });
    });

    test('keeps context_size, threads and gpu_layers that are given', async () => {
      const response = await llama(alice, { model_path: gguf(), context_size: 4096, threads: 2, gpu_layers: 0 });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration).toMatchObject({ context_size: 4096, threads: 2, gpu_layers: 0 });
    });

    test('refuses a configuration without model_path', async () => {
      const issues = validationIssues(await llama(alice, {}));
      expect(issues.map((issue) => issue.loc.join('.'))).toEqual(['body.configuration.model_path']);
      expect(issues[0]?.type).toBe('missing');
    });

    test('refuses a model_path that does not exist', async () => {
      expect(issueLocs(await llama(alice, { model_path: join(files, 'missing.gguf') }))).toEqual(['body.configuration.model_path']);
    });

    test('refuses a relative model_path', async () => {
      expect(issueLocs(await llama(alice, { model_path: 'models/model.gguf' }))).toEqual(['body.configuration.model_path']);
    });

    test('refuses a file that is not .gguf, even with the GGUF magic', async () => {
      const path = file('model.bin', Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(16)]));
      expect(issueLocs(await llama(alice, { model_path: path }))).toEqual(['body.configuration.model_path']);
    });

    test('refuses an x.gguf file that lacks the GGUF magic', async () => {
      const path = file('x.gguf', 'this is not a model');
      expect(issueLocs(await llama(alice, { model_path: path }))).toEqual(['body.configuration.model_path']);
      const empty = file('empty.gguf', '');
      expect(issueLocs(await llama(alice, { model_path: empty }))).toEqual(['body.configuration.model_path']);
    });

    test('refuses a folder named like a GGUF file', async () => {
      const dir = join(files, `dir-${crypto.randomUUID().slice(0, 8)}.gguf`);
      mkdirSync(dir);
      expect(issueLocs(await llama(alice, { model_path: dir }))).toEqual(['body.configuration.model_path']);
    });

    test('refuses bad threads, context_size and gpu_layers', async () => {
      const locs = issueLocs(await llama(alice, { model_path: gguf(), threads: -1, context_size: 'big', gpu_layers: -1 }));
      expect(locs.sort()).toEqual(['body.configuration.context_size', 'body.configuration.gpu_layers', 'body.configuration.threads']);
    });

    test('threads 0 means one per core, like a missing value', async () => {
      const response = await llama(alice, { model_path: gguf(), threads: 0 }, 'auto-threads');
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration.threads).toBe(coreCount());
    });

    test('refuses a negative cost', async () => {
      expect(issueLocs(await llama(alice, { model_path: gguf(), cost_per_1k_completion_tokens: -2 }))).toEqual([
        'body.configuration.cost_per_1k_completion_tokens',
      ]);
    });
  });

  describe('body validation', () => {
    test('refuses an unknown dtype with 422 on body.dtype', async () => {
      expect(issueLocs(await post(alice, { name: 'x', dtype: 'anthropic', configuration: { model: 'm' } }))).toEqual(['body.dtype']);
    });

    test('refuses missing fields, wrong types and a huge name', async () => {
      expect(issueLocs(await post(alice, {})).sort()).toEqual(['body.configuration', 'body.dtype', 'body.name']);
      expect(issueLocs(await post(alice, { name: 5, dtype: 'openai', configuration: { model: 'm' } }))).toEqual(['body.name']);
      expect(issueLocs(await post(alice, { name: 'x', dtype: 'openai', configuration: [] }))).toEqual(['body.configuration']);
      expect(issueLocs(await post(alice, { name: 'n'.repeat(201), dtype: 'openai', configuration: { model: 'm' } }))).toEqual([
        'body.name',
      ]);
    });

    test('refuses a body that is not JSON or not an object with 422 on body', async () => {
      for (const payload of ['{not json', '[1, 2]', 'null']) {
        const response = await t.request({
          method: 'POST',
          url: '/api/v1/models/',
          token: alice.token,
          payload,
          headers: { 'content-type': 'application/json' },
        });
        expect(issueLocs(response)).toEqual(['body']);
      }
    });
  });

  describe('list, detail, update and delete', () => {
    test('lists the tenant models as a plain array, or the envelope with skip/limit', async () => {
      const carol = await t.user();
      for (const name of ['m1', 'm2', 'm3']) await createModel(t, carol, name);
      const list = (query = '') => t.request({ method: 'GET', url: `/api/v1/models/${query}`, token: carol.token });
      const plain = (await list()).json();
      expect(plain.map((model: { name: string }) => model.name)).toEqual(['m1', 'm2', 'm3']);
      const page = (await list('?skip=1&limit=1')).json();
      expect(page).toMatchObject({ total: 3, skip: 1, limit: 1 });
      expect(page.items.map((model: { name: string }) => model.name)).toEqual(['m2']);
      expect((await list('?skip=2')).json()).toMatchObject({ total: 3, skip: 2, limit: 100 });
      expect(issueLocs(await list('?limit=0'))).toEqual(['query.limit']);
      expect(issueLocs(await list('?limit=1001'))).toEqual(['query.limit']);
      expect(issueLocs(await list('?skip=-1'))).toEqual(['query.skip']);
    });

    test('GET answers the model view, 404 for an unknown id', async () => {
      const model = await createModel(t, alice, 'detail');
      const response = await get(alice, model.id);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ id: model.id, name: 'detail', dtype: 'openai' });
      expect((await get(alice, UNKNOWN_ID)).statusCode).toBe(404);
    });

    test('PATCH changes the name', async () => {
      const model = await createModel(t, alice, 'rename-me');
      const response = await patch(alice, model.id, { name: 'renamed' });
      expect(response.statusCode).toBe(200);
      expect(response.json().name).toBe('renamed');
      expect((await get(alice, model.id)).json().name).toBe('renamed');
    });

    test('PATCH validates the new configuration for the model dtype', async () => {
      const model = await createModel(t, alice, 'patch-validate');
      expect(issueLocs(await patch(alice, model.id, { configuration: { model: 'm', base_url: 'ftp://x' } }))).toEqual([
        'body.configuration.base_url',
      ]);
      expect(issueLocs(await patch(alice, model.id, { configuration: { base_url: 'http://x/v1' } }))).toEqual(['body.configuration.model']);
      expect((await get(alice, model.id)).json().configuration.base_url).toBe('http://127.0.0.1:9/v1');
    });

    test('PATCH of dtype is 422 immutable_field', async () => {
      const model = await createModel(t, alice, 'fixed-dtype');
      const issues = validationIssues(await patch(alice, model.id, { dtype: 'llama_cpp' }));
      expect(issues).toEqual([{ loc: ['body', 'dtype'], msg: expect.any(String), type: 'immutable_field' }]);
      expect((await get(alice, model.id)).json().dtype).toBe('openai');
    });

    test('PATCH with an empty body is 422', async () => {
      const model = await createModel(t, alice, 'empty-patch');
      validationIssues(await patch(alice, model.id, {}));
    });

    test('DELETE removes the model and answers {message}', async () => {
      const model = await createModel(t, alice, 'delete-me');
      const response = await t.request({ method: 'DELETE', url: `/api/v1/models/${model.id}`, token: alice.token });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: expect.any(String) });
      expect((await get(alice, model.id)).statusCode).toBe(404);
    });

    test('DELETE of a model an endpoint links is 409 naming the endpoint', async () => {
      const model = await createModel(t, alice, 'linked');
      await createEndpoint(t, alice, { slug: 'uses-linked-model', model_id: model.id, response_type: 'summary' });
      const response = await t.request({ method: 'DELETE', url: `/api/v1/models/${model.id}`, token: alice.token });
      expect(response.statusCode).toBe(409);
      expect(response.json().detail).toContain('uses-linked-model');
      expect((await get(alice, model.id)).statusCode).toBe(200);
    });
  });

  describe('authentication and tenant isolation', () => {
    const routes = () => [
      { method: 'POST' as const, url: '/api/v1/models/', payload: { name: 'x', dtype: 'openai', configuration: { model: 'm' } } },
      { method: 'GET' as const, url: '/api/v1/models/' },
      { method: 'GET' as const, url: `/api/v1/models/${UNKNOWN_ID}` },
      { method: 'PATCH' as const, url: `/api/v1/models/${UNKNOWN_ID}`, payload: { name: 'y' } },
      { method: 'DELETE' as const, url: `/api/v1/models/${UNKNOWN_ID}` },
    ];

    test('every model route is 401 without a token', async () => {
      for (const route of routes()) {
        const response = await t.request(route);
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: 'Not authenticated' });
      }
    });

    test('every model route is 401 with a bad token', async () => {
      for (const route of routes()) {
        const response = await t.request({ ...route, token: 'garbage.token.here' });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: 'Could not validate credentials' });
      }
    });

    test("does not return, change or delete another tenant's model", async () => {
      const model = await createModel(t, alice, 'alice-only', { api_key: 'sk-alice-only' });
      expect((await get(bob, model.id)).statusCode).toBe(404);
      expect((await patch(bob, model.id, { name: 'stolen' })).statusCode).toBe(404);
      expect((await patch(bob, model.id, { configuration: { model: 'm', api_key: MASK } })).statusCode).toBe(404);
      expect((await t.request({ method: 'DELETE', url: `/api/v1/models/${model.id}`, token: bob.token })).statusCode).toBe(404);
      const stored = await get(alice, model.id);
      expect(stored.json().name).toBe('alice-only');
      const opened = await t.services.models.openConfiguration(await tenantOf(alice), model.id);
      expect(opened.configuration.api_key).toBe('sk-alice-only');
    });

    test("does not list another tenant's models", async () => {
      const model = await createModel(t, alice, 'alice-listed');
      const list = (await t.request({ method: 'GET', url: '/api/v1/models/', token: bob.token })).json();
      expect(list.map((m: { id: string }) => m.id)).not.toContain(model.id);
    });
  });
});
