import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ManualClock } from './fakes/clock.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { createDataset, createEndpoint } from './helpers/fixtures.ts';

/**
 * The clock given to createServices is the time of what knode stores (issue 25, "one clock"): an app whose
 * clock stands years away from the real time stamps its rows with that clock's time, not the system's.
 */

/** 2031-05-06T07:08:09.123Z: no system clock running this test can be there. */
const FIXED = Date.UTC(2031, 4, 6, 7, 8, 9, 123);
const at = (ms: number) => new Date(ms).toISOString();

describe('stored timestamps follow the injected clock', () => {
  let t: TestApp;
  let owner: TestUser;

  beforeAll(async () => {
    t = await createTestApp({}, undefined, { clock: new ManualClock(FIXED) });
    owner = await t.user('stamped');
  });
  afterAll(async () => {
    await t.close();
  });

  test("a user's creation time is the clock's", async () => {
    const me = await t.request({ method: 'GET', url: '/api/v1/auth/me', token: owner.token });
    expect(me.json()).toMatchObject({ created_at: at(FIXED) });
  });

  test("a dataset's and an endpoint's created_at and updated_at are the clock's, and move only when it does", async () => {
    const dataset = (await createDataset(t, owner, 'stamped-docs')) as { id: string; created_at?: string; updated_at?: string };
    expect(dataset).toMatchObject({ created_at: at(FIXED), updated_at: at(FIXED) });
    const endpoint = await createEndpoint(t, owner, { slug: 'stamped', dataset_id: dataset.id, response_type: 'raw' });
    expect(endpoint).toMatchObject({ created_at: at(FIXED), updated_at: at(FIXED) });

    t.clock.advance(90_000);
    const patched = await t.request({
      method: 'PATCH',
      url: `/api/v1/datasets/${dataset.id}`,
      token: owner.token,
      payload: { name: 'stamped-again' },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ created_at: at(FIXED), updated_at: at(FIXED + 90_000) });
    const endpointNow = await t.request({
      method: 'PATCH',
      url: '/api/v1/endpoints/stamped',
      token: owner.token,
      payload: { summary: 's' },
    });
    expect(endpointNow.statusCode).toBe(200);
    expect(endpointNow.json()).toMatchObject({ created_at: at(FIXED), updated_at: at(FIXED + 90_000) });
  });
});
