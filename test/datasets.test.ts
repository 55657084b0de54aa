import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir, validationIssues } from './helpers/app.ts';
import { ISO_UTC, UNKNOWN_ID } from './helpers/constants.ts';
import { createDataset, createEndpoint } from './helpers/fixtures.ts';

describe('datasets', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  /** A folder outside SVC_INGESTION_ROOTS (which createTestApp sets to the data dir). */
  let outside: string;

  beforeAll(async () => {
    t = await createTestApp();
    alice = await t.user();
    bob = await t.user();
    outside = tempDir('knode-outside-');
  });
  afterAll(async () => {
    await t.close();
    rmSync(outside, { recursive: true, force: true });
  });

  const folder = (name = 'folder') => {
    const path = join(t.dataDir, 'folders', `${name}-${crypto.randomUUID().slice(0, 8)}`);
    mkdirSync(path, { recursive: true });
    return path;
  };
  const post = (user: TestUser | undefined, payload: unknown, headers: Record<string, string> = {}) =>
    t.request({ method: 'POST', url: '/api/v1/datasets/', token: user?.token, payload: payload as object, headers });
  const create = (user: TestUser, configuration: Record<string, unknown>, name = `ds-${crypto.randomUUID().slice(0, 8)}`) =>
    post(user, { name, dtype: 'local_file', configuration });

  describe('create', () => {
    test('creates a local_file dataset with every configuration default filled in', async () => {
      const path = folder('docs');
      const response = await post(alice, {
        name: 'Team docs',
        dtype: 'local_file',
        summary: 'Our handbook',
        configuration: { ingestionPath: path },
      });
      expect(response.statusCode).toBe(201);
      const body = response.json();
      expect(body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'Team docs',
        summary: 'Our handbook',
        dtype: 'local_file',
        configuration: {
          ingestionPath: path,
          collectionName: expect.stringMatching(/^[A-Za-z0-9_]+$/),
          embedder: 'use-lite',
          chunkSize: 1000,
          chunkOverlap: 100,
          fileTypes: 'pdf,txt,md,docx,html,htm',
          cost_per_query: 0,
        },
        status: 'starting',
        error: null,
        ingestion: {
          files_total: 0,
          files_searchable: 0,
          files_indexed: 0,
          files_pending: 0,
          files_failed: 0,
          chunks: 0,
          chunks_embedded: 0,
        },
        search: {
          ranking: expect.stringContaining('BM25'),
          calibration: expect.stringContaining('use-lite'),
          fitted: null,
          vectors_missing: null,
        },
        created_at: expect.stringMatching(ISO_UTC),
        updated_at: expect.stringMatching(ISO_UTC),
      });
      expect(body.created_at).toBe(body.updated_at);
    });

    test('summary defaults to an empty string', async () => {
      const response = await create(alice, { ingestionPath: folder() });
      expect(response.statusCode).toBe(201);
      expect(response.json().summary).toBe('');
    });

    test('keeps the configuration values that are given', async () => {
      const response = await create(alice, {
        ingestionPath: folder(),
        collectionName: 'my_collection_1',
        chunkSize: 500,
        chunkOverlap: 50,
        fileTypes: 'md,txt',
        cost_per_query: 0.25,
        httpPort: 6333,
        grpcPort: 6334,
      });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration).toMatchObject({
        collectionName: 'my_collection_1',
        chunkSize: 500,
        chunkOverlap: 50,
        fileTypes: 'md,txt',
        cost_per_query: 0.25,
        httpPort: 6333,
        grpcPort: 6334,
      });
    });

    test('accepts an ingestion root itself as the folder', async () => {
      const response = await create(alice, { ingestionPath: t.dataDir });
      expect(response.statusCode).toBe(201);
    });

    test('accepts a symlink inside the root that points inside the root', async () => {
      const target = folder('target');
      const link = join(t.dataDir, `inside-link-${crypto.randomUUID().slice(0, 8)}`);
      symlinkSync(target, link);
      const response = await create(alice, { ingestionPath: link });
      expect(response.statusCode).toBe(201);
    });

    test('accepts a folder inside the root whose name starts with two dots', async () => {
      const path = join(t.dataDir, `..notes-${crypto.randomUUID().slice(0, 8)}`);
      mkdirSync(path);
      const response = await create(alice, { ingestionPath: path });
      expect(response.statusCode).toBe(201);
    });

    test('ignores unknown body fields', async () => {
      const response = await post(alice, {
        name: 'with-extra',
        dtype: 'local_file',
        configuration: { ingestionPath: folder() },
        colour: 'blue',
      });
      expect(response.statusCode).toBe(201);
      expect(response.json().colour).toBeUndefined();
    });

    test('refuses an unknown dtype with 422 on body.dtype', async () => {
      const response = await post(alice, { name: 'x', dtype: 'qdrant_cloud', configuration: { ingestionPath: folder() } });
      expect(issueLocs(response)).toEqual(['body.dtype']);
    });

    test('refuses a missing name, dtype or configuration with 422', async () => {
      expect(issueLocs(await post(alice, {})).sort()).toEqual(['body.configuration', 'body.dtype', 'body.name']);
    });

    test('refuses a configuration without ingestionPath', async () => {
      const issues = validationIssues(await create(alice, {}));
      expect(issues.map((issue) => issue.loc.join('.'))).toEqual(['body.configuration.ingestionPath']);
      expect(issues[0]?.type).toBe('missing');
    });

    test('refuses a relative ingestionPath', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: 'folders/docs' }))).toEqual(['body.configuration.ingestionPath']);
    });

    test('refuses a folder that does not exist', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: join(t.dataDir, 'no-such-folder') }))).toEqual([
        'body.configuration.ingestionPath',
      ]);
    });

    test('refuses a folder outside SVC_INGESTION_ROOTS', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: outside }))).toEqual(['body.configuration.ingestionPath']);
    });

    test('refuses a path that climbs out of the root with ..', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: join(t.dataDir, '..', '..') }))).toEqual(['body.configuration.ingestionPath']);
    });

    test('refuses a symlink inside the root that points outside it', async () => {
      const link = join(t.dataDir, `escape-${crypto.randomUUID().slice(0, 8)}`);
      symlinkSync(outside, link);
      expect(issueLocs(await create(alice, { ingestionPath: link }))).toEqual(['body.configuration.ingestionPath']);
    });

    test('refuses a file instead of a folder', async () => {
      const file = join(folder(), 'notes.txt');
      writeFileSync(file, 'hello');
      expect(issueLocs(await create(alice, { ingestionPath: file }))).toEqual(['body.configuration.ingestionPath']);
    });

    test('refuses an ingestionPath that is not a string', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: 42 }))).toEqual(['body.configuration.ingestionPath']);
    });

    test('refuses chunkOverlap equal to or above chunkSize', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: folder(), chunkSize: 500, chunkOverlap: 500 }))).toEqual([
        'body.configuration.chunkOverlap',
      ]);
      expect(issueLocs(await create(alice, { ingestionPath: folder(), chunkSize: 500, chunkOverlap: 600 }))).toEqual([
        'body.configuration.chunkOverlap',
      ]);
      expect(issueLocs(await create(alice, { ingestionPath: folder(), chunkOverlap: 1000 }))).toEqual(['body.configuration.chunkOverlap']);
    });

    test('refuses a chunkSize or chunkOverlap that is not a sane integer', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: folder(), chunkSize: 'big' }))).toContain('body.configuration.chunkSize');
      expect(issueLocs(await create(alice, { ingestionPath: folder(), chunkSize: 10.5 }))).toContain('body.configuration.chunkSize');
      expect(issueLocs(await create(alice, { ingestionPath: folder(), chunkOverlap: -1 }))).toContain('body.configuration.chunkOverlap');
    });

    test('refuses a collectionName with characters outside [A-Za-z0-9_]', async () => {
      for (const collectionName of ['has space', 'dash-ed', 'dot.ted', '', 42]) {
        expect(issueLocs(await create(alice, { ingestionPath: folder(), collectionName }))).toEqual(['body.configuration.collectionName']);
      }
    });

    test('refuses unsupported or malformed fileTypes', async () => {
      for (const fileTypes of ['exe', 'pdf,exe', ',', 42]) {
        expect(issueLocs(await create(alice, { ingestionPath: folder(), fileTypes }))).toEqual(['body.configuration.fileTypes']);
      }
      // A list is checked item by item, like any list of the schema: each wrong item at its place.
      expect(issueLocs(await create(alice, { ingestionPath: folder(), fileTypes: ['md', 1, 2] }))).toEqual([
        'body.configuration.fileTypes.1',
        'body.configuration.fileTypes.2',
      ]);
      expect(issueLocs(await create(alice, { ingestionPath: folder(), fileTypes: ['md', 'exe'] }))).toEqual([
        'body.configuration.fileTypes',
      ]);
    });

    test('refuses a negative cost_per_query', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: folder(), cost_per_query: -1 }))).toEqual([
        'body.configuration.cost_per_query',
      ]);
    });

    test('takes the quantized USE-lite (use-lite-int8) and keeps its name', async () => {
      const response = await create(alice, { ingestionPath: folder(), embedder: 'use-lite-int8' });
      expect(response.statusCode).toBe(201);
      expect(response.json().configuration.embedder).toBe('use-lite-int8');
    });

    test('refuses an unknown embedder', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: folder(), embedder: 'word2vec' }))).toEqual(['body.configuration.embedder']);
    });

    test('refuses wrong types in the body', async () => {
      expect(issueLocs(await post(alice, { name: 5, dtype: 'local_file', configuration: { ingestionPath: folder() } }))).toEqual([
        'body.name',
      ]);
      expect(issueLocs(await post(alice, { name: 'x', dtype: 'local_file', configuration: 'path' }))).toEqual(['body.configuration']);
      expect(
        issueLocs(await post(alice, { name: 'x', dtype: 'local_file', configuration: { ingestionPath: folder() }, summary: 7 })),
      ).toEqual(['body.summary']);
    });

    test('refuses a name longer than 200 characters, and a blank one', async () => {
      expect(issueLocs(await create(alice, { ingestionPath: folder() }, 'n'.repeat(201)))).toEqual(['body.name']);
      expect(issueLocs(await create(alice, { ingestionPath: folder() }, ''))).toEqual(['body.name']);
      expect(issueLocs(await create(alice, { ingestionPath: folder() }, '   '))).toEqual(['body.name']);
      expect((await create(alice, { ingestionPath: folder() }, 'n'.repeat(200))).statusCode).toBe(201);
    });

    test('refuses an oversized configuration with 4xx, never a 5xx', async () => {
      const manyKeys = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i]));
      expect(issueLocs(await create(alice, { ingestionPath: folder(), ...manyKeys }))).toEqual(['body.configuration']);
      expect(issueLocs(await create(alice, { ingestionPath: `/${'p'.repeat(5000)}` }))).toEqual(['body.configuration.ingestionPath']);
      const huge = await create(alice, { ingestionPath: folder(), note: 'x'.repeat(2 * 1024 * 1024) });
      expect(huge.statusCode).toBeGreaterThanOrEqual(400);
      expect(huge.statusCode).toBeLessThan(500);
    });

    test('refuses a body that is not JSON with 422 on body', async () => {
      const response = await post(alice, '{"name": "x", ', { 'content-type': 'application/json' });
      expect(issueLocs(response)).toEqual(['body']);
    });

    test('refuses a body that is an array with 422 on body', async () => {
      const response = await post(alice, JSON.stringify([{ name: 'x', dtype: 'local_file', configuration: {} }]), {
        'content-type': 'application/json',
      });
      expect(issueLocs(response)).toEqual(['body']);
    });

    test('refuses a JSON null or scalar body with 422, never a 5xx', async () => {
      for (const payload of ['null', '42', '"text"']) {
        const response = await post(alice, payload, { 'content-type': 'application/json' });
        expect(response.statusCode).toBe(422);
      }
    });

    test('refuses a duplicate name in the same tenant with 409', async () => {
      await createDataset(t, alice, 'unique-name');
      const again = await create(alice, { ingestionPath: folder() }, 'unique-name');
      expect(again.statusCode).toBe(409);
      expect(again.json().detail).toContain('unique-name');
    });

    test('allows the same name in another tenant', async () => {
      await createDataset(t, alice, 'shared-name');
      const response = await create(bob, { ingestionPath: folder() }, 'shared-name');
      expect(response.statusCode).toBe(201);
    });
  });

  describe('secrets in the configuration', () => {
    test('an api_key is answered as ******** and stored encrypted', async () => {
      const secret = 'sk-dataset-embedder-secret-123';
      const response = await create(alice, {
        ingestionPath: folder(),
        embedder: 'openai:text-embedding-3-small',
        base_url: 'http://127.0.0.1:9/v1',
        api_key: secret,
      });
      expect(response.statusCode).toBe(201);
      const body = response.json();
      expect(body.configuration.api_key).toBe('********');
      expect(response.body).not.toContain(secret);

      const detail = await t.request({ method: 'GET', url: `/api/v1/datasets/${body.id}`, token: alice.token });
      expect(detail.json().configuration.api_key).toBe('********');
      const list = await t.request({ method: 'GET', url: '/api/v1/datasets/', token: alice.token });
      expect(list.body).not.toContain(secret);

      const row = await t.services.database.db.selectFrom('datasets').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(JSON.parse(row.configuration).api_key).toStartWith('enc:');
      const opened = await t.services.datasets.openConfiguration(await tenantOf(t, alice), body.id);
      expect(opened.api_key).toBe(secret);
    });
  });

  describe('list', () => {
    let carol: TestUser;
    const names = ['first', 'second', 'third'];
    beforeAll(async () => {
      carol = await t.user();
      for (const name of names) await createDataset(t, carol, name);
    });
    const list = (query = '') => t.request({ method: 'GET', url: `/api/v1/datasets/${query}`, token: carol.token });

    test('answers a plain array of the tenant datasets, oldest first', async () => {
      const response = await list();
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(Array.isArray(body)).toBe(true);
      expect(body.map((d: { name: string }) => d.name)).toEqual(names);
      expect(Object.keys(body[0]).sort()).toEqual(
        ['configuration', 'created_at', 'dtype', 'error', 'id', 'ingestion', 'name', 'search', 'status', 'summary', 'updated_at'].sort(),
      );
    });

    test('answers the {items,total,skip,limit} envelope when skip or limit is given', async () => {
      const page = (await list('?skip=1&limit=1')).json();
      expect(page.total).toBe(3);
      expect(page.skip).toBe(1);
      expect(page.limit).toBe(1);
      expect(page.items.map((d: { name: string }) => d.name)).toEqual(['second']);
      expect((await list('?limit=2')).json()).toMatchObject({ total: 3, skip: 0, limit: 2 });
      expect((await list('?skip=0')).json()).toMatchObject({ total: 3, skip: 0, limit: 100 });
      expect((await list('?skip=5')).json()).toEqual({ items: [], total: 3, skip: 5, limit: 100 });
    });

    test('refuses limit 0, limit 1001 and skip -1 with 422 on the query parameter', async () => {
      expect(issueLocs(await list('?limit=0'))).toEqual(['query.limit']);
      expect(issueLocs(await list('?limit=1001'))).toEqual(['query.limit']);
      expect(issueLocs(await list('?skip=-1'))).toEqual(['query.skip']);
      expect(issueLocs(await list('?limit=many'))).toEqual(['query.limit']);
      expect((await list('?limit=1000')).statusCode).toBe(200);
    });

    test("does not list another tenant's datasets", async () => {
      const body = (await t.request({ method: 'GET', url: '/api/v1/datasets/', token: bob.token })).json();
      expect(body.map((d: { name: string }) => d.name)).not.toContain('first');
      const empty = await t.user();
      expect((await t.request({ method: 'GET', url: '/api/v1/datasets/', token: empty.token })).json()).toEqual([]);
    });
  });

  describe('detail, update and delete', () => {
    test('GET answers the dataset view', async () => {
      const dataset = await createDataset(t, alice, 'detail-me');
      const response = await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ id: dataset.id, name: 'detail-me', dtype: 'local_file' });
      // Started in the background as it was created: still starting, or already running on a quick engine.
      expect(['starting', 'running']).toContain(response.json().status);
    });

    test('GET of an unknown id is 404 with detail', async () => {
      const response = await t.request({ method: 'GET', url: `/api/v1/datasets/${UNKNOWN_ID}`, token: alice.token });
      expect(response.statusCode).toBe(404);
      expect(typeof response.json().detail).toBe('string');
    });

    test('an id that is not a UUID is 422 on path.id', async () => {
      const response = await t.request({ method: 'GET', url: '/api/v1/datasets/not-a-uuid', token: alice.token });
      expect(issueLocs(response)).toEqual(['path.id']);
    });

    test('PATCH changes name and summary and moves updated_at', async () => {
      const dataset = await createDataset(t, alice, 'patch-me');
      const before = (await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).json();
      // The clock moves on a second instead of the test waiting for it.
      t.clock.advance(1000);
      const response = await t.request({
        method: 'PATCH',
        url: `/api/v1/datasets/${dataset.id}`,
        token: alice.token,
        payload: { name: 'patched', summary: 'new summary' },
      });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body).toMatchObject({ id: dataset.id, name: 'patched', summary: 'new summary', configuration: before.configuration });
      expect(body.created_at).toBe(before.created_at);
      expect(body.updated_at > before.updated_at).toBe(true);
      const again = await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token });
      expect(again.json().name).toBe('patched');
    });

    test('PATCH of the summary alone keeps the name', async () => {
      const dataset = await createDataset(t, alice, 'keep-my-name');
      const response = await t.request({
        method: 'PATCH',
        url: `/api/v1/datasets/${dataset.id}`,
        token: alice.token,
        payload: { summary: 's' },
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ name: 'keep-my-name', summary: 's' });
    });

    test('PATCH of dtype or configuration is 422 immutable_field', async () => {
      const dataset = await createDataset(t, alice, 'immutable');
      for (const payload of [{ dtype: 'local_file' }, { configuration: { chunkSize: 10 } }, { name: 'ok', dtype: 'local_file' }]) {
        const issues = validationIssues(
          await t.request({ method: 'PATCH', url: `/api/v1/datasets/${dataset.id}`, token: alice.token, payload }),
        );
        expect(issues.every((issue) => issue.type === 'immutable_field')).toBe(true);
        expect(issues.map((issue) => issue.loc[0])).toEqual(issues.map(() => 'body'));
      }
      const stored = (await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).json();
      expect(stored.name).toBe('immutable');
      expect(stored.configuration.chunkSize).toBe(1000);
    });

    test('PATCH with an empty body is 422', async () => {
      const dataset = await createDataset(t, alice, 'empty-patch');
      const response = await t.request({ method: 'PATCH', url: `/api/v1/datasets/${dataset.id}`, token: alice.token, payload: {} });
      validationIssues(response);
    });

    test('PATCH validates name and summary', async () => {
      const dataset = await createDataset(t, alice, 'patch-validate');
      const patch = (payload: unknown) =>
        t.request({ method: 'PATCH', url: `/api/v1/datasets/${dataset.id}`, token: alice.token, payload: payload as object });
      expect(issueLocs(await patch({ name: 5 }))).toEqual(['body.name']);
      expect(issueLocs(await patch({ name: 'x'.repeat(201) }))).toEqual(['body.name']);
      expect(issueLocs(await patch({ summary: false }))).toEqual(['body.summary']);
    });

    test('PATCH to a name another dataset of the tenant has is 409', async () => {
      await createDataset(t, alice, 'taken-name');
      const dataset = await createDataset(t, alice, 'wants-taken-name');
      const response = await t.request({
        method: 'PATCH',
        url: `/api/v1/datasets/${dataset.id}`,
        token: alice.token,
        payload: { name: 'taken-name' },
      });
      expect(response.statusCode).toBe(409);
      expect(typeof response.json().detail).toBe('string');
    });

    test('DELETE removes the dataset and answers {message}', async () => {
      const dataset = await createDataset(t, alice, 'delete-me');
      const response = await t.request({ method: 'DELETE', url: `/api/v1/datasets/${dataset.id}`, token: alice.token });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ message: expect.any(String) });
      expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).statusCode).toBe(404);
      expect((await t.request({ method: 'DELETE', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).statusCode).toBe(404);
    });

    test('DELETE of a dataset an endpoint links is 409 naming the endpoint slug', async () => {
      const dataset = await createDataset(t, alice, 'linked');
      await createEndpoint(t, alice, { slug: 'uses-linked-dataset', dataset_id: dataset.id, response_type: 'raw' });
      const response = await t.request({ method: 'DELETE', url: `/api/v1/datasets/${dataset.id}`, token: alice.token });
      expect(response.statusCode).toBe(409);
      expect(response.json().detail).toContain('uses-linked-dataset');
      expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).statusCode).toBe(200);

      await t.request({ method: 'DELETE', url: '/api/v1/endpoints/uses-linked-dataset', token: alice.token });
      expect((await t.request({ method: 'DELETE', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).statusCode).toBe(200);
    });
  });

  describe('authentication', () => {
    const routes = () => [
      {
        method: 'POST' as const,
        url: '/api/v1/datasets/',
        payload: { name: 'x', dtype: 'local_file', configuration: { ingestionPath: t.dataDir } },
      },
      { method: 'GET' as const, url: '/api/v1/datasets/' },
      { method: 'GET' as const, url: `/api/v1/datasets/${UNKNOWN_ID}` },
      { method: 'PATCH' as const, url: `/api/v1/datasets/${UNKNOWN_ID}`, payload: { name: 'y' } },
      { method: 'DELETE' as const, url: `/api/v1/datasets/${UNKNOWN_ID}` },
    ];

    test('every dataset route is 401 Not authenticated without a token', async () => {
      for (const route of routes()) {
        const response = await t.request(route);
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: 'Not authenticated' });
        expect(response.headers['www-authenticate']).toBe('Bearer');
      }
    });

    test('every dataset route is 401 Could not validate credentials with a bad token', async () => {
      for (const route of routes()) {
        const response = await t.request({ ...route, token: 'not-a-valid-token' });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toEqual({ detail: 'Could not validate credentials' });
      }
    });
  });

  describe('tenant isolation', () => {
    test("does not return another tenant's dataset", async () => {
      const dataset = await createDataset(t, alice, 'private-get');
      const response = await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: bob.token });
      expect(response.statusCode).toBe(404);
      expect(response.body).not.toContain('private-get');
    });

    test("does not change another tenant's dataset", async () => {
      const dataset = await createDataset(t, alice, 'private-patch');
      const response = await t.request({
        method: 'PATCH',
        url: `/api/v1/datasets/${dataset.id}`,
        token: bob.token,
        payload: { name: 'stolen' },
      });
      expect(response.statusCode).toBe(404);
      const stored = await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token });
      expect(stored.json().name).toBe('private-patch');
    });

    test("does not delete another tenant's dataset", async () => {
      const dataset = await createDataset(t, alice, 'private-delete');
      const response = await t.request({ method: 'DELETE', url: `/api/v1/datasets/${dataset.id}`, token: bob.token });
      expect(response.statusCode).toBe(404);
      expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).statusCode).toBe(200);
    });

    test("does not let an endpoint link another tenant's dataset", async () => {
      const dataset = await createDataset(t, alice, 'private-link');
      const response = await t.request({
        method: 'POST',
        url: '/api/v1/endpoints/',
        token: bob.token,
        payload: { name: 'Thief', slug: 'thief', dataset_id: dataset.id, response_type: 'raw' },
      });
      expect(response.statusCode).toBe(404);
    });
  });
});

async function tenantOf(t: TestApp, user: TestUser) {
  return t.services.database.db.selectFrom('tenants').selectAll().where('name', '=', user.tenant).executeTakeFirstOrThrow();
}
