import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bucketStart, summarise, type UsageRow } from '../src/query/usage-summary.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { Dataset } from './helpers/datasets.ts';
import { createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';

function row(fields: Partial<UsageRow> & Pick<UsageRow, 'created_at'>): UsageRow {
  return {
    sender_email: 'a@example.com',
    status: 'success',
    refused_by: null,
    prompt_tokens: null,
    completion_tokens: null,
    total_cost: 0,
    payment_amount: null,
    latency_ms: null,
    ...fields,
  };
}

describe('usage summary (the arithmetic)', () => {
  const from = new Date('2026-11-20T10:30:00.000Z');
  const to = new Date('2026-11-20T13:00:00.000Z');

  test('every bucket of the range, empty ones too, from the start of the first', () => {
    const summary = summarise([], { bucket: 'hour', from, to });
    expect(summary.buckets.map((bucket) => bucket.start)).toEqual([
      '2026-11-20T10:00:00.000Z',
      '2026-11-20T11:00:00.000Z',
      '2026-11-20T12:00:00.000Z',
    ]);
    expect(summary.totals).toMatchObject({ queries: 0, refused_by: {}, latency_ms: { p50: null, p95: null } });
    expect(bucketStart(new Date('2026-11-20T23:59:59.999Z'), 'day').toISOString()).toBe('2026-11-20T00:00:00.000Z');
  });

  test('outcomes, refusals by policy, tokens, costs, nearest-rank percentiles and top callers', () => {
    const rows = [
      ...Array.from({ length: 20 }, (_, i) =>
        row({
          created_at: '2026-11-20T11:05:00.000Z',
          latency_ms: i + 1,
          prompt_tokens: 10,
          completion_tokens: 5,
          total_cost: 0.1,
          sender_email: i < 15 ? 'busy@example.com' : 'quiet@example.com',
        }),
      ),
      row({ created_at: '2026-11-20T12:00:00.000Z', status: 'refused', refused_by: 'access', sender_email: 'mallory@evil.test' }),
      row({ created_at: '2026-11-20T12:10:00.000Z', status: 'refused', refused_by: 'rate_limit' }),
      row({ created_at: '2026-11-20T12:20:00.000Z', status: 'error', latency_ms: 900 }),
      row({ created_at: '2026-11-20T12:30:00.000Z', payment_amount: 0.25, total_cost: 0 }),
      row({ created_at: '2026-11-20T13:00:00.000Z' }), // `to` is exclusive
    ];
    const summary = summarise(rows, { bucket: 'hour', from, to });
    expect(summary.totals).toEqual({
      queries: 24,
      succeeded: 21,
      failed: 1,
      refused: 2,
      refused_by: { access: 1, rate_limit: 1 },
      prompt_tokens: 200,
      completion_tokens: 100,
      cost: 2,
      charged: 0.25,
      latency_ms: { p50: 11, p95: 20 },
    });
    const [ten, eleven, twelve] = summary.buckets;
    expect(ten?.queries).toBe(0);
    expect(eleven).toMatchObject({ queries: 20, latency_ms: { p50: 10, p95: 19 } });
    expect(twelve).toMatchObject({ queries: 4, refused_by: { access: 1, rate_limit: 1 }, failed: 1 });
    expect(summary.top_callers[0]).toEqual({ sender_email: 'busy@example.com', queries: 15, refused: 0, cost: 1.5 });
    expect(summary.top_callers.find((caller) => caller.sender_email === 'mallory@evil.test')).toMatchObject({ refused: 1 });
  });
});

describe('GET /endpoints/{slug}/usage/summary', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let fake: FakeOpenAIServer;

  const query = (slug: string, headers: Record<string, string> = {}) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token: owner.token, headers, payload: { messages: 'cats' } });
  // A summary counts up to now, exclusive: the app's clock moves a millisecond first (it stands still
  // otherwise), so the queries just recorded lie before it, as they do on a clock that runs.
  const summary = (slug: string, search = '', user: TestUser | null = owner) => {
    t.clock.advance(1);
    return t.request({ method: 'GET', url: `/api/v1/endpoints/${slug}/usage/summary${search}`, ...(user ? { token: user.token } : {}) });
  };

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('uowner');
    stranger = await t.user('ustranger');
    fake = startFakeOpenAI();
    const folder = join(t.dataDir, 'kb');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cats.txt'), 'Cats are small domesticated carnivorous mammals that people keep as pets.');
    const dataset = await Dataset.create(t, owner, folder);
    await dataset.indexed();
    const model = await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url });
    await createEndpoint(t, owner, { slug: 'stats-ep', dataset_id: dataset.id, model_id: model.id, response_type: 'both' });
    const limited = await createEndpoint(t, owner, { slug: 'limited-ep', dataset_id: dataset.id, response_type: 'raw' });
    await createPolicy(t, owner, { endpoint_id: limited.id, policy_type: 'rate_limit', configuration: { rate: '1/m' } });
    const closed = await createEndpoint(t, owner, { slug: 'closed-ep', dataset_id: dataset.id, response_type: 'raw' });
    await createPolicy(t, owner, { endpoint_id: closed.id, policy_type: 'access', configuration: { mode: 'allow', patterns: ['x@y.z'] } });
  });

  afterAll(async () => {
    await fake.close();
    await t.close();
  });

  test('counts answered queries with their tokens, latency and caller; the playground is marked and can be left out', async () => {
    expect((await query('stats-ep')).statusCode).toBe(200);
    expect((await query('stats-ep', { 'x-knode-origin': 'playground' })).statusCode).toBe(200);
    const all = await summary('stats-ep');
    expect(all.statusCode).toBe(200);
    const body = all.json();
    expect(body.bucket).toBe('hour');
    expect(body.buckets).toHaveLength(25); // the last 24 hours, from the start of the first
    expect(body.totals).toMatchObject({ queries: 2, succeeded: 2, failed: 0, refused: 0 });
    expect(body.totals.prompt_tokens).toBeGreaterThan(0);
    expect(body.totals.completion_tokens).toBeGreaterThan(0);
    expect(body.totals.latency_ms.p50).toBeGreaterThanOrEqual(0);
    expect(body.buckets.at(-1).queries).toBe(2);
    expect(body.top_callers).toEqual([{ sender_email: owner.email, queries: 2, refused: 0, cost: expect.any(Number) }]);
    const consumers = (await summary('stats-ep', '?include_playground=false')).json();
    expect(consumers.totals.queries).toBe(1);
  });

  test('refusals are counted by the policy that refused', async () => {
    expect((await query('limited-ep')).statusCode).toBe(200);
    expect((await query('limited-ep')).statusCode).toBe(429);
    expect((await query('closed-ep')).statusCode).toBe(403);
    const limited = (await summary('limited-ep')).json();
    expect(limited.totals).toMatchObject({ queries: 2, succeeded: 1, refused: 1, refused_by: { rate_limit: 1 } });
    const closed = (await summary('closed-ep')).json();
    expect(closed.totals).toMatchObject({ queries: 1, refused: 1, refused_by: { access: 1 } });
    // The usage list shows the refusal with its reason.
    const rows = (await t.request({ method: 'GET', url: '/api/v1/endpoints/closed-ep/usage', token: owner.token })).json();
    expect(rows[0]).toMatchObject({ status: 'refused', error: `Access denied for ${owner.email}` });
  });

  test('by day over a range given', async () => {
    const body = (await summary('stats-ep', '?bucket=day&from=2026-01-01T00:00:00Z&to=2026-01-08T00:00:00Z')).json();
    expect(body.buckets.map((bucket: { start: string }) => bucket.start.slice(0, 10))).toEqual([
      '2026-01-01',
      '2026-01-02',
      '2026-01-03',
      '2026-01-04',
      '2026-01-05',
      '2026-01-06',
      '2026-01-07',
    ]);
    expect(body.totals.queries).toBe(0);
  });

  test('422 for a bad bucket, a date that is not one, a reversed range and too many buckets', async () => {
    expect(issueLocs(await summary('stats-ep', '?bucket=minute'))).toEqual(['query.bucket']);
    expect(issueLocs(await summary('stats-ep', '?from=yesterday'))).toEqual(['query.from']);
    expect(issueLocs(await summary('stats-ep', '?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z'))).toEqual(['query.from']);
    expect(issueLocs(await summary('stats-ep', '?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z'))).toEqual(['query.from']);
    expect(issueLocs(await summary('stats-ep', '?include_playground=maybe'))).toEqual(['query.include_playground']);
  });

  test('401 without or with bad credentials; 404 for another tenant and for a missing endpoint', async () => {
    expect((await summary('stats-ep', '', null)).statusCode).toBe(401);
    expect((await t.request({ method: 'GET', url: '/api/v1/endpoints/stats-ep/usage/summary', token: 'not-a-token' })).statusCode).toBe(
      401,
    );
    expect((await summary('stats-ep', '', stranger)).statusCode).toBe(404);
    expect((await summary('no-such-ep')).statusCode).toBe(404);
  });
});
