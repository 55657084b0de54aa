import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { hourOf, MAX_TERMS_PER_QUESTION, questionTerms } from '../src/analytics/question-terms.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { ADMIN_KEY, UNKNOWN_ID } from './helpers/constants.ts';
import { createDataset, createEndpoint, createModel } from './helpers/fixtures.ts';

/**
 * Tenant-wide analytics (issue 27, item 5): GET /api/v1/analytics/{summary,series,top-users,terms} over
 * real queries (their terms are kept as they are recorded) and over usage rows written directly (payments,
 * times in the past).
 */

describe('the terms kept of a question', () => {
  test('topical words only: lower case, compatibility form, no stop words, single characters or hashes, each once', () => {
    expect(questionTerms('How do I bake SOURDOUGH bread? Is sourdough bread healthy, Café or ＣＡＦÉ?')).toEqual([
      'bake',
      'sourdough',
      'bread',
      'healthy',
      'café',
    ]);
    expect(questionTerms(`x ${'a'.repeat(33)} ok ${'0123456789abcdef'.repeat(4)}`)).toEqual(['ok']);
    expect(questionTerms('the and of')).toEqual([]);
  });

  test('a long message is read only at its start, and gives a bounded number of terms', () => {
    const words = Array.from({ length: 500 }, (_, i) => `word${i}`).join(' ');
    expect(questionTerms(words)).toHaveLength(MAX_TERMS_PER_QUESTION);
    expect(questionTerms(`${' '.repeat(5000)}hidden`)).toEqual([]);
  });

  test('kept by the hour only', () => {
    expect(hourOf(new Date('2026-11-26T11:42:13.456Z'))).toBe('2026-11-26T11:00:00.000Z');
  });
});

describe('GET /api/v1/analytics/...', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let fake: FakeOpenAIServer;
  let chat: { id: string; slug: string };
  let library: { id: string; slug: string };
  let dataset: { id: string };
  let strangerEndpoint: { id: string };
  let strangerDataset: { id: string };
  const QUESTION = 'How do I bake Sourdough bread at home?';

  // The analytics count up to now, exclusive: the app's clock moves a millisecond first (it stands still
  // otherwise), so the queries just recorded lie before it, as they do on a clock that runs.
  const get = (path: string, user: TestUser | null = owner, headers: Record<string, string> = {}) => {
    t.clock.advance(1);
    return t.request({ method: 'GET', url: `/api/v1/analytics/${path}`, ...(user ? { token: user.token } : {}), headers });
  };
  const asMember = (path: string) => get(path, member, { 'x-tenant-name': owner.tenant });
  const ask = (slug: string, question: string, headers: Record<string, string> = {}) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token: owner.token, headers, payload: { messages: question } });

  /** A usage row of the owner's tenant written directly: a time in the past, a payment. */
  async function usageRow(fields: Record<string, unknown>) {
    const tenant = await t.tenant(owner);
    await t.services.database.db
      .insertInto('query_usage')
      .values({
        tenant_id: tenant.id,
        endpoint_id: library.id,
        sender_email: 'payer@example.com',
        dataset_cost: 0,
        model_cost: 0,
        total_cost: 0,
        tokens: 0,
        status: 'success',
        error: null,
        payment_rail: null,
        payment_amount: null,
        payment_transaction: null,
        latency_ms: 100,
        origin: 'api',
        created_at: '2026-03-10T09:15:00.000Z',
        ...fields,
      })
      .execute();
  }

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('aowner');
    member = await t.user('amember');
    stranger = await t.user('astranger');
    const added = await t.request({
      method: 'POST',
      url: `/api/v1/tenants/${owner.tenant}/members`,
      token: owner.token,
      payload: { email: member.email },
    });
    expect(added.statusCode).toBe(201);
    fake = startFakeOpenAI();
    const model = await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url });
    dataset = await createDataset(t, owner, 'recipes');
    chat = await createEndpoint(t, owner, { slug: 'chat', model_id: model.id, response_type: 'summary' });
    // Serves the dataset; its rows are written directly (a search would wait for indexing).
    library = await createEndpoint(t, owner, { slug: 'library', dataset_id: dataset.id, model_id: model.id, response_type: 'summary' });
    strangerDataset = await createDataset(t, stranger, 'secret');
    strangerEndpoint = await createEndpoint(t, stranger, { slug: 'elsewhere', dataset_id: strangerDataset.id, response_type: 'raw' });

    expect((await ask('chat', QUESTION)).statusCode).toBe(200);
    expect((await ask('chat', 'Which flour makes the best sourdough?')).statusCode).toBe(200);
    expect((await ask('chat', 'Sourdough starter smells odd', { 'x-knode-origin': 'playground' })).statusCode).toBe(200);

    // March 2026: two collected MPP payments, one that failed on chain afterwards, one by accounting, an error.
    await usageRow({ payment_rail: 'mpp', payment_amount: 0.25, payment_transaction: '0x1', latency_ms: 200 });
    await usageRow({ payment_rail: 'mpp', payment_amount: 0.5, payment_transaction: '0x2', created_at: '2026-03-11T10:00:00.000Z' });
    await usageRow({ payment_rail: 'mpp', payment_amount: 9, payment_transaction: '0x3', error: 'the transaction failed on chain' });
    await usageRow({ payment_rail: 'accounting', payment_amount: 7, payment_transaction: 'acct-1', sender_email: 'other@example.com' });
    await usageRow({ status: 'error', error: 'model unreachable', sender_email: 'other@example.com', latency_ms: null });
  });

  afterAll(async () => {
    await fake.close();
    await t.close();
  });

  const MARCH = 'from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z';

  describe('summary', () => {
    test('queries, distinct users, MPP revenue collected, errors and average latency over the range', async () => {
      const response = await get(`summary?${MARCH}`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        from: '2026-03-01T00:00:00.000Z',
        to: '2026-04-01T00:00:00.000Z',
        endpoint_id: null,
        dataset_id: null,
        coverage: { rows: 5, row_limit: 100_000, capped: false, counted_from: '2026-03-01T00:00:00.000Z' },
        queries: 5,
        users: 2,
        revenue_usd: 0.75,
        errors: 1,
        refused: 0,
        average_latency_ms: 125,
      });
    });

    test('by default the last 30 days: the queries just asked, the playground included unless left out', async () => {
      const all = (await get('summary')).json();
      expect(all).toMatchObject({ queries: 3, users: 1, revenue_usd: 0, errors: 0 });
      expect(all.average_latency_ms).toBeGreaterThanOrEqual(0);
      expect((await get('summary?include_playground=false')).json().queries).toBe(2);
    });

    test('filtered by an endpoint, or by the endpoints serving a dataset', async () => {
      expect((await get(`summary?${MARCH}&endpoint_id=${chat.id}`)).json()).toMatchObject({ endpoint_id: chat.id, queries: 0 });
      expect((await get(`summary?${MARCH}&endpoint_id=${library.id}`)).json().queries).toBe(5);
      const byDataset = (await get(`summary?${MARCH}&dataset_id=${dataset.id}`)).json();
      expect(byDataset).toMatchObject({ dataset_id: dataset.id, queries: 5, revenue_usd: 0.75 });
      expect((await get(`summary?dataset_id=${dataset.id}`)).json().queries).toBe(0);
    });

    test('the admin key acts as the tenant it names; a member sees the figures', async () => {
      const admin = await t.request({
        method: 'GET',
        url: `/api/v1/analytics/summary?${MARCH}`,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-tenant-name': owner.tenant },
      });
      expect(admin.statusCode).toBe(200);
      expect(admin.json().queries).toBe(5);
      const seen = await asMember(`summary?${MARCH}`);
      expect(seen.statusCode).toBe(200);
      expect(seen.json().queries).toBe(5);
    });
  });

  describe('series', () => {
    test('every day of the range, empty ones included, with queries, users and revenue', async () => {
      const response = await get('series?from=2026-03-09T00:00:00Z&to=2026-03-13T00:00:00Z');
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.bucket).toBe('day');
      expect(body.buckets).toEqual([
        { start: '2026-03-09T00:00:00.000Z', queries: 0, users: 0, revenue_usd: 0 },
        { start: '2026-03-10T00:00:00.000Z', queries: 4, users: 2, revenue_usd: 0.25 },
        { start: '2026-03-11T00:00:00.000Z', queries: 1, users: 1, revenue_usd: 0.5 },
        { start: '2026-03-12T00:00:00.000Z', queries: 0, users: 0, revenue_usd: 0 },
      ]);
      expect(body.coverage).toEqual({ rows: 5, row_limit: 100_000, capped: false, counted_from: '2026-03-09T00:00:00.000Z' });
    });

    test('by hour, from the start of the first hour', async () => {
      const body = (await get('series?bucket=hour&from=2026-03-10T08:30:00Z&to=2026-03-10T11:00:00Z')).json();
      expect(body.buckets.map((bucket: { start: string; queries: number }) => [bucket.start.slice(11, 13), bucket.queries])).toEqual([
        ['08', 0],
        ['09', 4],
        ['10', 0],
      ]);
    });
  });

  describe('top users', () => {
    test('most queries first, with their errors and revenue, a page at a time', async () => {
      const body = (await get(`top-users?${MARCH}`)).json();
      expect(body.total).toBe(2);
      expect(body.items).toEqual([
        { sender_email: 'payer@example.com', queries: 3, errors: 0, revenue_usd: 0.75, last_query_at: '2026-03-11T10:00:00.000Z' },
        { sender_email: 'other@example.com', queries: 2, errors: 1, revenue_usd: 0, last_query_at: '2026-03-10T09:15:00.000Z' },
      ]);
      const second = (await get(`top-users?${MARCH}&skip=1&limit=1`)).json();
      expect(second).toMatchObject({ total: 2, skip: 1, limit: 1 });
      expect(second.items.map((item: { sender_email: string }) => item.sender_email)).toEqual(['other@example.com']);
      expect((await get('top-users')).json().items).toEqual([
        { sender_email: owner.email, queries: 3, errors: 0, revenue_usd: 0, last_query_at: expect.any(String) },
      ]);
    });
  });

  describe('terms', () => {
    test("the owner's word cloud: normalised terms with their counts, stop words left out, never a question", async () => {
      const response = await get('terms');
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.terms[0]).toEqual({ term: 'sourdough', count: 3 });
      const terms = body.terms.map((entry: { term: string }) => entry.term);
      expect(terms).toEqual(expect.arrayContaining(['bake', 'bread', 'home', 'flour', 'best', 'starter']));
      for (const stop of ['how', 'do', 'i', 'at', 'which', 'the']) expect(terms).not.toContain(stop);
      expect(body.coverage).toMatchObject({ rows: body.terms.reduce((sum: number, entry: { count: number }) => sum + entry.count, 0) });
      expect(body.coverage.capped).toBe(false);
      expect(response.body).not.toContain(QUESTION);
      expect(response.body).not.toContain('Sourdough');
    });

    test('bounded to the top N, filtered like the rest, the playground left out when asked', async () => {
      expect((await get('terms?limit=2')).json().terms).toHaveLength(2);
      const consumers = (await get('terms?include_playground=false')).json();
      expect(consumers.terms[0]).toEqual({ term: 'sourdough', count: 2 });
      expect(consumers.terms.map((entry: { term: string }) => entry.term)).not.toContain('starter');
      expect((await get(`terms?endpoint_id=${library.id}`)).json().terms).toEqual([]);
      expect((await get(`terms?endpoint_id=${chat.id}`)).json().terms.length).toBeGreaterThan(0);
    });

    test('no table keeps the question: the usage rows have no text of it, the term rows neither caller nor minute', async () => {
      const { db } = t.services.database;
      const usage = await db.selectFrom('query_usage').selectAll().execute();
      expect(JSON.stringify(usage)).not.toContain('bake');
      const kept = await db
        .selectFrom('query_terms' as never)
        .selectAll()
        .execute();
      expect(kept.length).toBeGreaterThan(0);
      expect(Object.keys(kept[0] as object).sort()).toEqual(['asked_hour', 'endpoint_id', 'id', 'origin', 'tenant_id', 'term']);
      for (const row of kept as { asked_hour: string }[]) expect(row.asked_hour).toMatch(/T\d{2}:00:00\.000Z$/);
    });

    test('a member is refused with the reason (403); the admin key may', async () => {
      const refused = await asMember('terms');
      expect(refused.statusCode).toBe(403);
      expect(refused.json().detail).toContain(`Only the owner of '${owner.tenant}'`);
      const admin = await t.request({
        method: 'GET',
        url: '/api/v1/analytics/terms',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-tenant-name': owner.tenant },
      });
      expect(admin.statusCode).toBe(200);
      expect(admin.json().terms[0].term).toBe('sourdough');
    });
  });

  describe('refusals', () => {
    const ROUTES = ['summary', 'series', 'top-users', 'terms'];

    test('401 without credentials or with a bad token, on every route', async () => {
      for (const route of ROUTES) {
        expect((await get(route, null)).statusCode).toBe(401);
        expect((await t.request({ method: 'GET', url: `/api/v1/analytics/${route}`, token: 'not-a-token' })).statusCode).toBe(401);
      }
    });

    test("404 for another tenant's endpoint or dataset, as for a missing one, on every route", async () => {
      for (const route of ROUTES) {
        expect((await get(`${route}?endpoint_id=${strangerEndpoint.id}`)).statusCode).toBe(404);
        expect((await get(`${route}?dataset_id=${strangerDataset.id}`)).statusCode).toBe(404);
        expect((await get(`${route}?endpoint_id=${UNKNOWN_ID}`)).statusCode).toBe(404);
      }
      // The other tenant sees its own figures only: none of the owner's.
      expect((await get(`summary?${MARCH}`, stranger)).json().queries).toBe(0);
      expect((await get('terms', stranger)).json().terms).toEqual([]);
    });

    test('422 with loc/msg/type for what is not a date, a reversed or too long range, both filters, a bad id or limit', async () => {
      for (const route of ROUTES) {
        expect(issueLocs(await get(`${route}?from=yesterday`))).toEqual(['query.from']);
        expect(issueLocs(await get(`${route}?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`))).toEqual(['query.from']);
        expect(issueLocs(await get(`${route}?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z`))).toEqual(['query.from']);
        expect(issueLocs(await get(`${route}?endpoint_id=${chat.id}&dataset_id=${dataset.id}`))).toEqual(['query.dataset_id']);
        expect(issueLocs(await get(`${route}?endpoint_id=chat`))).toEqual(['query.endpoint_id']);
        expect(issueLocs(await get(`${route}?include_playground=maybe`))).toEqual(['query.include_playground']);
      }
      expect(issueLocs(await get('series?bucket=minute'))).toEqual(['query.bucket']);
      const hourly = await get('series?bucket=hour&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z');
      expect(issueLocs(hourly)).toEqual(['query.from']);
      expect(hourly.json().detail[0]).toMatchObject({ type: 'value_error', msg: expect.stringContaining('31 days') });
      expect(issueLocs(await get('top-users?limit=101'))).toEqual(['query.limit']);
      expect(issueLocs(await get('terms?limit=0'))).toEqual(['query.limit']);
      expect(issueLocs(await get('terms?limit=201'))).toEqual(['query.limit']);
    });
  });
});
