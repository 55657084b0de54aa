import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIGURATION_TYPES } from '../src/endpoints/configuration-types.ts';
import { deadServerUrl, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';

/**
 * The API the console needs besides the resources: first-run status, type discovery, folder browsing,
 * dataset search, model discovery on an OpenAI-compatible server and the access check. Each: what it
 * answers, 422, 401, and what another tenant sees.
 */
describe('console routes', () => {
  let t: TestApp;
  let owner: TestUser;
  let other: TestUser;
  let fake: FakeOpenAIServer;
  let root: string;

  beforeAll(async () => {
    fake = startFakeOpenAI({ models: ['llama3.2', 'qwen2.5'], apiKey: 'sk-the-right-key-1234' });
    t = await createTestApp();
    owner = await t.user('owner');
    // A second tenant, granted no folder: it may browse nothing.
    other = await t.user('other', { grantRoots: false });
    root = realpathSync(t.dataDir);
    const library = join(root, 'library');
    mkdirSync(join(library, 'papers', 'deep'), { recursive: true });
    mkdirSync(join(library, '.hidden'), { recursive: true });
    mkdirSync(join(library, 'models'), { recursive: true });
    writeFileSync(join(library, 'readme.md'), '# Library');
    writeFileSync(join(library, 'papers', 'a.pdf'), '%PDF-1.4');
    writeFileSync(join(library, 'papers', 'b.DOCX'), 'docx');
    writeFileSync(join(library, 'papers', 'deep', 'c.txt'), 'text');
    writeFileSync(join(library, 'papers', 'picture.png'), 'png');
    writeFileSync(join(library, 'papers', '.secret.txt'), 'hidden');
    writeFileSync(join(library, '.hidden', 'd.txt'), 'hidden');
    writeFileSync(join(library, 'models', 'tiny.gguf'), 'GGUF');
    // A link out of the roots is never followed.
    symlinkSync(tempDir('knode-outside-'), join(library, 'outside'));
  });

  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  describe('GET /api/v1/auth/setup', () => {
    test('says whether anyone has registered, and whether this client may register', async () => {
      const empty = await createTestApp();
      try {
        expect((await empty.request({ method: 'GET', url: '/api/v1/auth/setup' })).json()).toEqual({
          has_users: false,
          registration_open: true,
        });
        await empty.user();
        expect((await empty.request({ method: 'GET', url: '/api/v1/auth/setup' })).json()).toEqual({
          has_users: true,
          registration_open: true,
        });
        // In development mode only this machine may register: not a request through a proxy or tunnel.
        const forwarded = await empty.request({ method: 'GET', url: '/api/v1/auth/setup', headers: { 'x-forwarded-for': '203.0.113.9' } });
        expect(forwarded.json().registration_open).toBe(false);
      } finally {
        await empty.close();
      }
    });

    test('registration closed by the operator is closed to the console too', async () => {
      const closed = await createTestApp({ SVC_ADMIN_API_KEY: 'an-admin-key-of-enough-length', SVC_OPEN_REGISTRATION: 'false' });
      try {
        expect((await closed.request({ method: 'GET', url: '/api/v1/auth/setup' })).json()).toEqual({
          has_users: false,
          registration_open: false,
        });
      } finally {
        await closed.close();
      }
    });
  });

  describe('GET /api/v1/types', () => {
    test('lists every dataset, model and policy type with the JSON Schema of its configuration', async () => {
      const response = await t.request({ method: 'GET', url: '/api/v1/types', token: owner.token });
      expect(response.statusCode).toBe(200);
      const types = response.json() as Record<
        string,
        { type: string; description: string; configuration_schema: Record<string, unknown> }[]
      >;
      for (const [kind, registry] of Object.entries(CONFIGURATION_TYPES)) {
        expect(types[kind]?.map((entry) => entry.type)).toEqual(Object.keys(registry));
      }
      const localFile = types.dataset?.find((entry) => entry.type === 'local_file');
      expect(localFile?.configuration_schema).toMatchObject({
        type: 'object',
        required: ['ingestionPath'],
        properties: { chunkSize: { type: 'integer', default: 1000 } },
      });
      expect(localFile?.description).toBe('A folder of documents, indexed on this machine');
      const access = types.policy?.find((entry) => entry.type === 'access');
      expect(access?.configuration_schema).toMatchObject({ properties: { mode: { enum: ['allow', 'deny'] } } });
    });

    test('?kind= narrows to one kind; an unknown kind is a 422', async () => {
      const policies = await t.request({ method: 'GET', url: '/api/v1/types?kind=policy', token: owner.token });
      expect(Object.keys(policies.json())).toEqual(['policy']);
      const unknown = await t.request({ method: 'GET', url: '/api/v1/types?kind=widget', token: owner.token });
      expect(issueLocs(unknown)).toEqual(['query.kind']);
    });

    test('needs credentials, and every tenant sees the same types', async () => {
      expect((await t.request({ method: 'GET', url: '/api/v1/types' })).statusCode).toBe(401);
      const mine = await t.request({ method: 'GET', url: '/api/v1/types', token: owner.token });
      const theirs = await t.request({ method: 'GET', url: '/api/v1/types', token: other.token });
      expect(theirs.json()).toEqual(mine.json());
    });
  });

  describe('GET /api/v1/folders', () => {
    const list = (user: TestUser | undefined, path?: string) =>
      t.request({
        method: 'GET',
        url: path === undefined ? '/api/v1/folders' : `/api/v1/folders?path=${encodeURIComponent(path)}`,
        ...(user ? { token: user.token } : {}),
      });

    test('without a path: the tenant’s roots, with their counts', async () => {
      const response = await list(owner);
      expect(response.statusCode).toBe(200);
      const listing = response.json();
      expect(listing.path).toBeNull();
      expect(listing.parent).toBeNull();
      expect(listing.folders.map((folder: { path: string }) => folder.path)).toEqual([root]);
    });

    test('a folder: its sub-folders (hidden ones and links left out) with documents and models counted below them', async () => {
      const library = join(root, 'library');
      const listing = (await list(owner, library)).json();
      expect(listing.path).toBe(library);
      expect(listing.parent).toBe(root);
      expect(listing.folders).toEqual([
        { name: 'models', path: join(library, 'models'), documents: 0, models: 1, complete: true },
        { name: 'papers', path: join(library, 'papers'), documents: 3, models: 0, complete: true },
      ]);
      expect(listing.files).toEqual([{ name: 'readme.md', path: join(library, 'readme.md'), size: 9, kind: 'document' }]);
      const models = (await list(owner, join(library, 'models'))).json();
      expect(models.files).toEqual([{ name: 'tiny.gguf', path: join(library, 'models', 'tiny.gguf'), size: 4, kind: 'model' }]);
      // A root's parent is the list of roots.
      expect((await list(owner, root)).json().parent).toBeNull();
    });

    test('nothing outside the roots: a relative path, a file, a missing folder, a link out, a hidden folder or a folder above is a 422', async () => {
      const library = join(root, 'library');
      for (const path of [
        'library',
        join(library, 'readme.md'),
        join(library, 'missing'),
        join(library, 'outside'),
        join(library, '.hidden'),
        '/',
        join(root, '..'),
      ]) {
        const response = await list(owner, path);
        expect(issueLocs(response)).toEqual(['query.path']);
      }
      expect((await list(owner, join(library, 'outside'))).json().detail[0].msg).toBe("Not a folder inside your tenant's ingestion roots");
    });

    test('needs credentials', async () => {
      expect((await list(undefined)).statusCode).toBe(401);
    });

    test("another tenant sees none of this tenant's folders", async () => {
      expect((await list(other)).json().folders).toEqual([]);
      expect(issueLocs(await list(other, join(root, 'library')))).toEqual(['query.path']);
    });

    test('counting stops at its budget and says so', async () => {
      const { FolderBrowser } = await import('../src/console/folders.ts');
      const browser = new FolderBrowser({ roots: async () => [root], documentExtensions: ['txt', 'md', 'pdf', 'docx'], countBudget: 2 });
      const listing = await browser.list('any', join(root, 'library'));
      expect(listing.folders.some((folder) => !folder.complete)).toBe(true);
    });
  });

  describe('POST /api/v1/datasets/{id}/search', () => {
    let dataset: Dataset;

    beforeAll(async () => {
      dataset = await Dataset.create(t, owner, undefined, {
        embedder: 'openai:fake-embed',
        base_url: fake.url,
        api_key: 'sk-the-right-key-1234',
      });
      writeFileSync(join(dataset.folder, 'lighthouses.md'), '# Lighthouses\n\nA lighthouse keeper trims the lamp wick every evening.');
      writeFileSync(join(dataset.folder, 'gardens.txt'), 'Tomatoes need sun, water and a stake to climb.');
      await dataset.settled();
    });

    const search = (user: TestUser | undefined, id: string, payload: Record<string, unknown>) =>
      t.request({ method: 'POST', url: `/api/v1/datasets/${id}/search`, payload, ...(user ? { token: user.token } : {}) });

    test('answers the references a query would, in each mode', async () => {
      for (const mode of ['hybrid', 'keyword', 'vector']) {
        const response = await search(owner, dataset.id, { query: 'lighthouse keeper wick', mode, limit: 2 });
        expect(response.statusCode).toBe(200);
        const body = response.json();
        expect(body.provider_info.mode).toBe(mode);
        expect(body.documents.length).toBeGreaterThan(0);
        if (mode !== 'vector') expect(body.documents[0].metadata.source).toBe('lighthouses.md');
        for (const document of body.documents) expect(document.similarity_score).toBeWithin(0, 1.000001);
      }
    });

    test('checks its body', async () => {
      expect(issueLocs(await search(owner, dataset.id, { query: '  ' }))).toEqual(['body.query']);
      expect(issueLocs(await search(owner, dataset.id, { query: 'x', mode: 'fuzzy', limit: 0 })).sort()).toEqual([
        'body.limit',
        'body.mode',
      ]);
    });

    test('needs credentials', async () => {
      expect((await search(undefined, dataset.id, { query: 'lighthouse' })).statusCode).toBe(401);
    });

    test("another tenant's dataset is not found", async () => {
      expect((await search(other, dataset.id, { query: 'lighthouse' })).statusCode).toBe(404);
    });
  });

  describe('POST /api/v1/models/discover', () => {
    const discover = (user: TestUser | undefined, payload: Record<string, unknown>) =>
      t.request({ method: 'POST', url: '/api/v1/models/discover', payload, ...(user ? { token: user.token } : {}) });

    test('lists the models of an OpenAI-compatible server', async () => {
      const response = await discover(owner, { base_url: `${fake.url}/`, api_key: 'sk-the-right-key-1234' });
      expect(response.json()).toEqual({
        base_url: fake.url,
        reachable: true,
        models: [
          { id: 'llama3.2', owned_by: 'fake' },
          { id: 'qwen2.5', owned_by: 'fake' },
        ],
        error: null,
      });
    });

    test('a server that refuses the key or does not answer is unreachable, with the reason and never the key', async () => {
      const refused = (await discover(owner, { base_url: fake.url, api_key: 'sk-a-wrong-key-98765' })).json();
      expect(refused.reachable).toBe(false);
      expect(refused.error).toContain('401');
      expect(refused.error).not.toContain('sk-a-wrong-key-98765');
      expect(refused.error).not.toContain('98765');
      const dead = (await discover(owner, { base_url: await deadServerUrl() })).json();
      expect(dead).toMatchObject({ reachable: false, models: [] });
      expect(dead.error).toStartWith('Cannot reach the server');
    });

    test('checks its body', async () => {
      expect(issueLocs(await discover(owner, { base_url: 'ftp://example.org/v1' }))).toEqual(['body.base_url']);
      expect(issueLocs(await discover(owner, {}))).toEqual(['body.base_url']);
    });

    test('needs credentials, and answers every tenant alike (nothing is stored)', async () => {
      expect((await discover(undefined, { base_url: fake.url })).statusCode).toBe(401);
      const theirs = await discover(other, { base_url: fake.url, api_key: 'sk-the-right-key-1234' });
      expect(theirs.json().models).toHaveLength(2);
    });
  });

  describe('POST /api/v1/policies/access/check', () => {
    const check = (user: TestUser | undefined, configuration: Record<string, unknown>, email: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/policies/access/check',
        payload: { configuration, email },
        ...(user ? { token: user.token } : {}),
      });
    const allow = { mode: 'allow', patterns: ['bob@example.com', '.*@example\\.org'] };

    test('answers as the query would: plain e-mails literally, other patterns as whole-e-mail expressions', async () => {
      expect((await check(owner, allow, 'BOB@example.com')).json()).toEqual({ allowed: true, matched_pattern: 'bob@example.com' });
      expect((await check(owner, allow, 'carol@example.org')).json()).toEqual({ allowed: true, matched_pattern: '.*@example\\.org' });
      // The dots of a plain e-mail are dots; an expression must match the whole e-mail.
      expect((await check(owner, allow, 'bobXexample.com')).json()).toEqual({ allowed: false, matched_pattern: null });
      expect((await check(owner, allow, 'carol@example.org.evil.test')).json()).toEqual({ allowed: false, matched_pattern: null });
      expect((await check(owner, { ...allow, mode: 'deny' }, 'carol@example.org')).json()).toEqual({
        allowed: false,
        matched_pattern: '.*@example\\.org',
      });
    });

    test('checks the configuration as creating the policy would', async () => {
      expect(issueLocs(await check(owner, { mode: 'allow', patterns: ['(a)\\1'] }, 'a@b.c'))).toEqual(['body.configuration.patterns.0']);
      expect(issueLocs(await check(owner, { mode: 'maybe', patterns: [] }, 'a@b.c')).sort()).toEqual([
        'body.configuration.mode',
        'body.configuration.patterns',
      ]);
      expect(issueLocs(await check(owner, allow, ''))).toEqual(['body.email']);
    });

    test('needs credentials, and stores nothing another tenant could see', async () => {
      expect((await check(undefined, allow, 'bob@example.com')).statusCode).toBe(401);
      expect((await check(other, allow, 'bob@example.com')).json().allowed).toBe(true);
    });
  });
});
