import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { loadConfig } from '../../src/config.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createDataset, createModel } from '../helpers/fixtures.ts';

/**
 * Issue 22, item 5: nothing bounded what one tenant may create (10,000 endpoints in 28 s). Each tenant now
 * has quotas (SVC_TENANT_QUOTAS: endpoints, datasets, models; policies per endpoint): over one is a 403 that
 * names it, exact even when the creations arrive together, and another tenant is not affected.
 */
describe('security: one tenant cannot create without bound', () => {
  let t: TestApp;
  let owner: TestUser;
  let other: TestUser;
  let modelId: string;

  const endpoint = (user: TestUser, slug: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/endpoints/',
      token: user.token,
      payload: { name: slug, slug, model_id: user === owner ? modelId : undefined, response_type: 'summary' },
    });

  beforeAll(async () => {
    t = await createTestApp({ SVC_TENANT_QUOTAS: 'endpoints=3,datasets=1,models=2,policies=2' });
    owner = await t.user('quota-owner');
    other = await t.user('quota-other');
    modelId = (await createModel(t, owner, 'm1')).id;
  });
  afterAll(async () => {
    await t.close();
  });

  test('ten endpoints asked for at once: exactly three are created, the others get a 403 naming the quota', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, (_, index) => endpoint(owner, `burst-${index}`)));
    expect(answers.filter((answer) => answer.statusCode === 201)).toHaveLength(3);
    const refused = answers.filter((answer) => answer.statusCode === 403);
    expect(refused).toHaveLength(7);
    expect(refused[0]?.json().detail).toBe('Quota reached: a tenant may have at most 3 endpoints (SVC_TENANT_QUOTAS endpoints=3)');
    const listed = await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: owner.token });
    expect(listed.json()).toHaveLength(3);
  });

  test('datasets and models per tenant, policies per endpoint', async () => {
    await createDataset(t, owner, 'first');
    const refusedDataset = await createDataset(t, owner, 'second').catch((error: Error) => error.message);
    expect(refusedDataset).toContain('403');
    expect(refusedDataset).toContain('at most 1 datasets');

    await createModel(t, owner, 'm2');
    const third = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'm3', dtype: 'openai', configuration: { model: 'x', base_url: 'http://127.0.0.1:9/v1' } },
    });
    expect(third.statusCode).toBe(403);
    expect(third.json().detail).toContain('at most 2 models');

    const listed = (await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: owner.token })).json() as { id: string }[];
    const policy = (endpointId: string, index: number) =>
      t.request({
        method: 'POST',
        url: '/api/v1/policies/',
        token: owner.token,
        payload: { name: `p${index}`, policy_type: 'rate_limit', endpoint_id: endpointId, configuration: { rate: '10/m' } },
      });
    const [first, second] = listed as [{ id: string }, { id: string }];
    expect((await policy(first.id, 1)).statusCode).toBe(201);
    expect((await policy(first.id, 2)).statusCode).toBe(201);
    const over = await policy(first.id, 3);
    expect(over.statusCode).toBe(403);
    expect(over.json().detail).toBe('Quota reached: an endpoint may have at most 2 policies (SVC_TENANT_QUOTAS policies=2)');
    // The quota is per endpoint: another one takes its own.
    expect((await policy(second.id, 1)).statusCode).toBe(201);
  });

  test("another tenant's quota is its own", async () => {
    const model = await createModel(t, other, 'theirs');
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/',
      token: other.token,
      payload: { name: 'theirs', slug: 'theirs', model_id: model.id, response_type: 'summary' },
    });
    expect(created.statusCode).toBe(201);
  });

  test('the variable: named quotas over the defaults, 0 unlimited, anything else one clear line', () => {
    expect(loadConfig({ SVC_TENANT_QUOTAS: 'endpoints=0' }).tenantQuotas).toEqual({
      endpoints: 0,
      datasets: 100,
      models: 100,
      policies: 50,
    });
    expect(loadConfig({}).tenantQuotas).toEqual({ endpoints: 500, datasets: 100, models: 100, policies: 50 });
    expect(() => loadConfig({ SVC_TENANT_QUOTAS: 'endpoints=-1' })).toThrow(/^SVC_TENANT_QUOTAS: must be a comma-separated list/);
    expect(() => loadConfig({ SVC_TENANT_QUOTAS: 'users=5' })).toThrow(/^SVC_TENANT_QUOTAS:/);
  });
});
