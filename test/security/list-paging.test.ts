import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createDataset, createEndpoint, createModel, createPolicy } from '../helpers/fixtures.ts';

/**
 * Issue 22, item 5: lists were built whole before paging (`?limit=10` of 10,000 endpoints took 1.1 s, and
 * five lists in parallel held every request 2.5 to 4 s). A page is now read by SQL (LIMIT/OFFSET, with a
 * count), so its cost follows the page; it holds the same rows, in the same order, as the whole list.
 */
describe('security: a page of a list is read by SQL, and is the same slice of the whole list', () => {
  let t: TestApp;
  let owner: TestUser;
  let endpointId: string;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('pager');
    const model = await createModel(t, owner, 'm0');
    for (let index = 1; index < 7; index++) await createModel(t, owner, `m${index}`);
    for (let index = 0; index < 5; index++) await createDataset(t, owner, `d${index}`);
    for (let index = 0; index < 12; index++) {
      const endpoint = await createEndpoint(t, owner, {
        name: `e${index}`,
        slug: `page-${index}`,
        model_id: model.id,
        response_type: 'summary',
      });
      endpointId ??= endpoint.id;
    }
    for (let index = 0; index < 8; index++) {
      await createPolicy(t, owner, {
        name: `p${index}`,
        endpoint_id: endpointId,
        policy_type: 'rate_limit',
        configuration: { rate: `${index + 1}/m` },
      });
    }
  });
  afterAll(async () => {
    await t.close();
  });

  const list = async (path: string) => (await t.request({ method: 'GET', url: path, token: owner.token })).json();

  for (const [path, count] of [
    ['/api/v1/endpoints/', 12],
    ['/api/v1/models/', 7],
    ['/api/v1/datasets/', 5],
    ['/api/v1/policies/', 8],
  ] as const) {
    test(`${path}: ?skip=&limit= is the slice of the whole list, with the total`, async () => {
      const whole = (await list(path)) as { id: string }[];
      expect(whole).toHaveLength(count);
      const page = await list(`${path}?skip=2&limit=3`);
      expect(page.total).toBe(count);
      expect(page.skip).toBe(2);
      expect(page.limit).toBe(3);
      expect(page.items.map((item: { id: string }) => item.id)).toEqual(whole.slice(2, 5).map((item) => item.id));
      const past = await list(`${path}?skip=${count + 5}`);
      expect(past).toEqual({ items: [], total: count, skip: count + 5, limit: 100 });
    });
  }

  test("an endpoint's policies, paged", async () => {
    const page = await list(`/api/v1/policies?endpoint_id=${endpointId}&limit=5`);
    expect(page.total).toBe(8);
    expect(page.items).toHaveLength(5);
  });
});
