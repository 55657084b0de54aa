import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_CONFIGURATION_BYTES } from '../../src/http/issues.ts';
import { createTestApp, type TestApp, type TestUser, validationIssues } from '../helpers/app.ts';
import { createEndpoint, createModel, createPolicy } from '../helpers/fixtures.ts';

/** A configuration value that makes the configuration just over the bound, yet the body well under 1 MiB. */
const bulk = 'x'.repeat(MAX_CONFIGURATION_BYTES);

describe('a configuration larger than 64 KiB is a 422, and nothing is stored', () => {
  let t: TestApp;
  let owner: TestUser;
  let endpoint: { id: string };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user();
    const model = await createModel(t, owner, 'size-model');
    endpoint = await createEndpoint(t, owner, { slug: 'size-endpoint', model_id: model.id, response_type: 'summary' });
  });
  afterAll(() => t.close());

  const send = (method: 'POST' | 'PATCH', url: string, payload: object) => t.request({ method, url, token: owner.token, payload });

  function expectTooLarge(response: Parameters<typeof validationIssues>[0]): void {
    expect(validationIssues(response)).toEqual([
      { loc: ['body', 'configuration'], msg: expect.stringContaining(`${MAX_CONFIGURATION_BYTES} bytes`), type: 'too_long' },
    ]);
  }

  test('datasets: create', async () => {
    const folder = join(t.dataDir, 'size');
    mkdirSync(folder, { recursive: true });
    expectTooLarge(
      await send('POST', '/api/v1/datasets/', { name: 'big', dtype: 'local_file', configuration: { ingestionPath: folder, notes: bulk } }),
    );
    expect((await t.request({ method: 'GET', url: '/api/v1/datasets/', token: owner.token })).json()).toEqual([]);
  });

  test('models: create and PATCH; a configuration just within the bound is accepted', async () => {
    expectTooLarge(
      await send('POST', '/api/v1/models/', { name: 'big', dtype: 'openai', configuration: { model: 'm', system_prompt: bulk } }),
    );
    const model = await createModel(t, owner, 'grows');
    expectTooLarge(await send('PATCH', `/api/v1/models/${model.id}`, { configuration: { model: 'm', system_prompt: bulk } }));
    const room = MAX_CONFIGURATION_BYTES - JSON.stringify({ model: 'm', system_prompt: '' }).length;
    const fits = await send('PATCH', `/api/v1/models/${model.id}`, { configuration: { model: 'm', system_prompt: 'x'.repeat(room) } });
    expect(fits.statusCode).toBe(200);
  });

  test('policies: create and PATCH', async () => {
    const access = { name: 'big', policy_type: 'access', endpoint_id: endpoint.id };
    const configuration = { mode: 'allow', patterns: ['a@example.com'] };
    expectTooLarge(await send('POST', '/api/v1/policies/', { ...access, configuration: { ...configuration, notes: bulk } }));
    const policy = await createPolicy(t, owner, { ...access, configuration });
    expectTooLarge(await send('PATCH', `/api/v1/policies/${policy.id}`, { configuration: { ...configuration, notes: bulk } }));
  });
});
