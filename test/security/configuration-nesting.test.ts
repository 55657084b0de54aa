import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import Fastify from 'fastify';
import { registerErrorHandler } from '../../src/http/error-handler.ts';
import { MAX_CONFIGURATION_DEPTH } from '../../src/http/issues.ts';
import { MAX_JSON_BODY_DEPTH, registerJsonBodyParser } from '../../src/http/json-body.ts';
import { createTestApp, type TestApp, type TestUser, validationIssues } from '../helpers/app.ts';
import { createEndpoint, createModel, createPolicy } from '../helpers/fixtures.ts';

/** `{"a":{"a":...1...}}` with `levels` objects, as text: building it as a value would need the recursion under test. */
function nestedObjects(levels: number): string {
  return `${'{"a":'.repeat(levels - 1)}{"a":1}${'}'.repeat(levels - 1)}`;
}

function nestedArrays(levels: number): string {
  return '['.repeat(levels) + ']'.repeat(levels);
}

const DEEP = '__DEEP__';

/** The body as JSON text, with the JSON text `deep` where the DEEP marker stands. */
function jsonWith(body: object, deep: string): string {
  return JSON.stringify(body).replace(`"${DEEP}"`, deep);
}

const json = { 'content-type': 'application/json' };

/** A 422 on the too-deep value, wherever the bound was crossed (the configuration check or the body parser). */
function expectTooDeep(response: LightMyRequestResponse): void {
  const issues = validationIssues(response);
  expect(issues).toHaveLength(1);
  expect(issues[0]?.loc.slice(0, 3)).toEqual(['body', 'configuration', 'deep']);
  expect(issues[0]?.type).toBe('too_deep');
}

describe('a configuration nested 16,000 levels deep is a 422, not a 500', () => {
  let t: TestApp;
  let owner: TestUser;
  let endpoint: { id: string };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user();
    const model = await createModel(t, owner, 'nesting-model');
    endpoint = await createEndpoint(t, owner, { slug: 'nesting-endpoint', model_id: model.id, response_type: 'summary' });
  });
  afterAll(() => t.close());

  const send = (method: 'POST' | 'PATCH', url: string, payload: string) =>
    t.request({ method, url, token: owner.token, headers: json, payload });
  const deep = nestedObjects(16_000);

  test('datasets: create', async () => {
    const folder = join(t.dataDir, 'nesting');
    mkdirSync(folder, { recursive: true });
    expectTooDeep(
      await send(
        'POST',
        '/api/v1/datasets/',
        jsonWith({ name: 'deep', dtype: 'local_file', configuration: { ingestionPath: folder, deep: DEEP } }, deep),
      ),
    );
    const list = await t.request({ method: 'GET', url: '/api/v1/datasets/', token: owner.token });
    expect(list.json()).toEqual([]);
  });

  test('models: create and PATCH', async () => {
    expectTooDeep(
      await send('POST', '/api/v1/models/', jsonWith({ name: 'deep', dtype: 'openai', configuration: { model: 'm', deep: DEEP } }, deep)),
    );
    const model = await createModel(t, owner, 'patched-deep');
    expectTooDeep(await send('PATCH', `/api/v1/models/${model.id}`, jsonWith({ configuration: { model: 'm', deep: DEEP } }, deep)));
    const shown = await t.request({ method: 'GET', url: `/api/v1/models/${model.id}`, token: owner.token });
    expect(shown.json().configuration.deep).toBeUndefined();
  });

  test('policies: create and PATCH', async () => {
    const access = { name: 'deep', policy_type: 'access', endpoint_id: endpoint.id };
    const configuration = { mode: 'allow', patterns: ['a@example.com'] };
    expectTooDeep(await send('POST', '/api/v1/policies/', jsonWith({ ...access, configuration: { ...configuration, deep: DEEP } }, deep)));
    const policy = await createPolicy(t, owner, { ...access, configuration });
    expectTooDeep(
      await send('PATCH', `/api/v1/policies/${policy.id}`, jsonWith({ configuration: { ...configuration, deep: DEEP } }, deep)),
    );
  });

  test('arrays count as levels too', async () => {
    expectTooDeep(
      await send(
        'POST',
        '/api/v1/models/',
        jsonWith({ name: 'deep-arrays', dtype: 'openai', configuration: { model: 'm', deep: DEEP } }, nestedArrays(16_000)),
      ),
    );
  });

  test(`${MAX_CONFIGURATION_DEPTH} levels are accepted, one more is a 422 naming where`, async () => {
    // The configuration is level 1 and `deep` level 2: `deep` may hold MAX - 1 levels, its own included.
    const body = (name: string) => ({ name, dtype: 'openai', configuration: { model: 'm', deep: DEEP } });
    const fits = await send('POST', '/api/v1/models/', jsonWith(body('fits'), nestedObjects(MAX_CONFIGURATION_DEPTH - 1)));
    expect(fits.statusCode).toBe(201);
    const tooDeep = await send('POST', '/api/v1/models/', jsonWith(body('too-deep'), nestedObjects(MAX_CONFIGURATION_DEPTH)));
    expect(validationIssues(tooDeep)).toEqual([
      {
        loc: ['body', 'configuration', 'deep', ...Array(MAX_CONFIGURATION_DEPTH - 1).fill('a')],
        msg: expect.stringContaining(`${MAX_CONFIGURATION_DEPTH} levels`),
        type: 'too_deep',
      },
    ]);
  });
});

describe('a JSON body nested 500,000 levels deep is a 422 before any route walks it', () => {
  // A route that walks its body recursively, as JSON.stringify (and many libraries) do.
  async function echoApp(withParser: boolean) {
    const app = Fastify();
    registerErrorHandler(app);
    if (withParser) registerJsonBodyParser(app);
    app.post('/echo', async (request) => ({ length: JSON.stringify(request.body).length }));
    await app.ready();
    return app;
  }
  const deepBody = `{"extras":${nestedArrays(500_000)}}`;

  test('the bounded parser refuses it with the path where the bound was crossed', async () => {
    // The attack: without the bound, the route overflows the stack and answers 500.
    const unbounded = await echoApp(false);
    expect((await unbounded.inject({ method: 'POST', url: '/echo', headers: json, payload: deepBody })).statusCode).toBe(500);
    await unbounded.close();

    const app = await echoApp(true);
    const response = await app.inject({ method: 'POST', url: '/echo', headers: json, payload: deepBody });
    // The body is level 1, `extras` level 2: the first array beyond the bound sits MAX - 1 indexes further.
    expect(validationIssues(response)).toEqual([
      {
        loc: ['body', 'extras', ...Array(MAX_JSON_BODY_DEPTH - 1).fill(0)],
        msg: expect.stringContaining(`${MAX_JSON_BODY_DEPTH} levels`),
        type: 'too_deep',
      },
    ]);
    // What the default parser refused before still is, and bodies within the bound still pass.
    const poisoned = await app.inject({ method: 'POST', url: '/echo', headers: json, payload: '{"__proto__":{"admin":true}}' });
    expect(poisoned.statusCode).toBe(422);
    const fine = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: json,
      payload: `{"a":${nestedArrays(MAX_JSON_BODY_DEPTH - 1)}}`,
    });
    expect(fine.statusCode).toBe(200);
    await app.close();
  });
});
