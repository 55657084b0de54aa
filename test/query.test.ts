import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeAccounting, startFakeAccounting } from './fakes/accounting-server.ts';
import { deadServerUrl, FAKE_ANSWER, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { Dataset } from './helpers/datasets.ts';
import { createDataset, createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { connectMarketplace } from './helpers/hub.ts';
import { sseEvents } from './helpers/streams.ts';
import { engineSearch } from './helpers/test-engine.ts';
import { waitFor } from './helpers/wait.ts';

const FIRST_LINE = FAKE_ANSWER.split('\n')[0] as string;

describe('queries', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let fake: FakeOpenAIServer;
  let accounting: FakeAccounting;
  let hub: FakeSyftHub;
  let datasetId: string;
  let modelId: string;

  const query = (slug: string, payload: object, user: TestUser | string = owner) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token: typeof user === 'string' ? user : user.token, payload });

  const endpoint = (slug: string, body: Record<string, unknown>) => createEndpoint(t, owner, { name: slug, slug, ...body });

  beforeAll(async () => {
    t = await createTestApp({ SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('qowner');
    stranger = await t.user('qstranger');
    fake = startFakeOpenAI();
    accounting = startFakeAccounting('owner@accounting.example', 'acct-password');
    // The accounting service belongs to the tenant's default marketplace, whose credentials are checked at its hub.
    hub = await startFakeSyftHub();

    const folder = join(t.dataDir, 'kb');
    mkdirSync(folder);
    writeFileSync(join(folder, 'cats.txt'), 'Cats are small domesticated carnivorous mammals that people keep as pets.');
    writeFileSync(
      join(folder, 'rockets.md'),
      '# Rockets\n\nA rocket engine burns propellant to produce thrust and lift spacecraft into orbit.',
    );
    const dataset = await Dataset.create(t, owner, folder, { cost_per_query: 0.01 });
    datasetId = dataset.id;
    await dataset.indexed();
    await dataset.until('running', (view) => view.status === 'running');
    modelId = (
      await createModel(t, owner, 'fake', {
        model: 'fake-model',
        base_url: fake.url,
        cost_per_1k_prompt_tokens: 1,
        cost_per_1k_completion_tokens: 2,
      })
    ).id;
    await endpoint('raw-ep', { dataset_id: datasetId, response_type: 'raw' });
    await endpoint('summary-ep', { model_id: modelId, response_type: 'summary' });
    await endpoint('both-ep', { dataset_id: datasetId, model_id: modelId, response_type: 'both' });
  });

  afterAll(async () => {
    await fake.close();
    await accounting.close();
    await t.close();
    await hub.close();
  });

  describe('request validation', () => {
    const cases: [string, object, string][] = [
      ['messages missing', {}, 'body.messages'],
      ['messages empty string', { messages: '' }, 'body.messages'],
      ['messages empty list', { messages: [] }, 'body.messages'],
      ['a message with an unknown role', { messages: [{ role: 'wizard', content: 'hi' }] }, 'body.messages.0.role'],
      ['similarity_threshold above 1', { messages: 'x', similarity_threshold: 1.5 }, 'body.similarity_threshold'],
      ['similarity_threshold below 0', { messages: 'x', similarity_threshold: -0.1 }, 'body.similarity_threshold'],
      ['temperature above 2', { messages: 'x', temperature: 2.5 }, 'body.temperature'],
      ['presence_penalty below -2', { messages: 'x', presence_penalty: -3 }, 'body.presence_penalty'],
      ['frequency_penalty above 2', { messages: 'x', frequency_penalty: 2.1 }, 'body.frequency_penalty'],
      ['limit 0', { messages: 'x', limit: 0 }, 'body.limit'],
      ['max_tokens 0', { messages: 'x', max_tokens: 0 }, 'body.max_tokens'],
      ['stream as a string', { messages: 'x', stream: 'yes' }, 'body.stream'],
      ['stop_sequences not a list', { messages: 'x', stop_sequences: '\n' }, 'body.stop_sequences'],
      [
        'an unknown search mode',
        { messages: 'x', extras: { reference_options: { mode: 'psychic' } } },
        'body.extras.reference_options.mode',
      ],
    ];
    for (const [name, payload, loc] of cases) {
      test(`${name} is a 422 on ${loc}`, async () => {
        expect(issueLocs(await query('both-ep', payload))).toEqual([loc]);
      });
    }
  });

  test('raw: references only, summary null, dataset cost', async () => {
    const response = await query('raw-ep', { messages: 'pets such as cats', similarity_threshold: 0 });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.summary).toBeNull();
    expect(body.references.cost).toBe(0.01);
    expect(body.references.documents[0]).toMatchObject({
      content: expect.stringContaining('Cats'),
      metadata: { source: 'cats.txt', file_type: 'txt', chunk_index: 0 },
    });
    expect(body.references.documents[0].similarity_score).toBeGreaterThan(0.5);
    expect(body.references.provider_info).toMatchObject({
      search_engine: expect.stringContaining(engineSearch.vectorStore),
      response_time_ms: expect.any(Number),
    });
    // Beside the specification's parts: the total cost, its currency, and what the policies did (none here).
    expect(body).toMatchObject({ cost: 0.01, currency: 'USD', policy_metadata: { outcome: 'success', entries: [] } });
  });

  test('raw honours similarity_threshold, limit and include_metadata', async () => {
    const strict = await query('raw-ep', { messages: 'pets like kittens', similarity_threshold: 0.99 });
    expect(strict.json().references.documents).toEqual([]);
    const limited = await query('raw-ep', { messages: 'pets like kittens', similarity_threshold: 0, limit: 1, include_metadata: false });
    const documents = limited.json().references.documents;
    expect(documents).toHaveLength(1);
    expect(documents[0].metadata).toEqual({});
  });

  test('summary: the model answers the caller’s messages; a string becomes one user message; no references key', async () => {
    const before = fake.requests.length;
    const response = await query('summary-ep', { messages: 'Hello there', temperature: 0.2, max_tokens: 50 });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect('references' in body).toBe(false);
    expect(body.summary).toMatchObject({ model: 'fake-model', finish_reason: 'stop', message: { role: 'assistant', content: FIRST_LINE } });
    expect(body.summary.message.tokens).toBe(body.summary.usage.completion_tokens);
    const expectedCost = (body.summary.usage.prompt_tokens / 1000) * 1 + (body.summary.usage.completion_tokens / 1000) * 2;
    expect(body.summary.cost).toBeCloseTo(expectedCost, 10);
    const sent = fake.requests.slice(before).find((request) => request.path.endsWith('/chat/completions'));
    expect(sent?.body?.messages).toEqual([{ role: 'user', content: 'Hello there' }]);
    expect(sent?.body).toMatchObject({ temperature: 0.2, max_tokens: 50, stop: ['\n'] });
  });

  test('both: the references go first, as one system message, and both costs are counted', async () => {
    const before = fake.requests.length;
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Tell me about pets such as cats' },
    ];
    const response = await query('both-ep', { messages, similarity_threshold: 0.3 });
    const body = response.json();
    expect(body.references.documents.length).toBeGreaterThan(0);
    expect(body.summary.message.content).toBe(FIRST_LINE);
    const sent = fake.requests.slice(before).find((request) => request.path.endsWith('/chat/completions'));
    const sentMessages = sent?.body?.messages as { role: string; content: string }[];
    expect(sentMessages[0]?.role).toBe('system');
    expect(sentMessages[0]?.content).toStartWith('Use the following context to answer:');
    // Each passage: its number, `title | source | date` (the file's name when it has no title), then its text (API-CONTRACT 6).
    expect(sentMessages[0]?.content).toMatch(/\n\[1\] cats\.txt \| cats\.txt( \| \d{4}-\d{2}-\d{2})?\nCats are small/);
    expect(sentMessages.slice(1)).toEqual(messages);
  });

  test('both without any reference above the threshold sends the messages unchanged', async () => {
    const before = fake.requests.length;
    await query('both-ep', { messages: 'anything', similarity_threshold: 1 });
    const sent = fake.requests.slice(before).find((request) => request.path.endsWith('/chat/completions'));
    expect(sent?.body?.messages).toEqual([{ role: 'user', content: 'anything' }]);
  });

  test('the search uses the last user message, and extras.summarize_options reach the model', async () => {
    const before = fake.requests.length;
    const response = await query('both-ep', {
      messages: [
        { role: 'user', content: 'rockets and thrust' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'pets such as cats' },
      ],
      similarity_threshold: 0,
      limit: 1,
      extras: { summarize_options: { top_p: 0.5, seed: 7 }, reference_options: { mode: 'vector' } },
    });
    const body = response.json();
    expect(body.references.documents[0].metadata.source).toBe('cats.txt');
    expect(body.references.provider_info.mode).toBe('vector');
    const sent = fake.requests.slice(before).find((request) => request.path.endsWith('/chat/completions'));
    expect(sent?.body).toMatchObject({ top_p: 0.5, seed: 7 });
  });

  test('the admin key and a member’s token may query; others get 401 or 404', async () => {
    expect((await query('raw-ep', { messages: 'x' }, ADMIN_KEY)).statusCode).toBe(404); // admin acts in `default`
    const admin = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/raw-ep/query',
      token: ADMIN_KEY,
      headers: { 'x-tenant-name': owner.tenant },
      payload: { messages: 'x' },
    });
    expect(admin.statusCode).toBe(200);
    expect((await t.request({ method: 'POST', url: '/api/v1/endpoints/raw-ep/query', payload: { messages: 'x' } })).statusCode).toBe(401);
    expect((await query('raw-ep', { messages: 'x' }, 'sat_live_not_known_here')).statusCode).toBe(401);
    expect((await query('raw-ep', { messages: 'x' }, stranger)).statusCode).toBe(404);
    expect((await query('no-such-endpoint', { messages: 'x' })).statusCode).toBe(404);
  });

  test('a dead model gives a 502 naming the model, and the failure is recorded', async () => {
    const dead = await createModel(t, owner, 'dead', { model: 'dead-model', base_url: await deadServerUrl(), timeout_ms: 2000 });
    await endpoint('dead-ep', { model_id: dead.id, response_type: 'summary' });
    const response = await query('dead-ep', { messages: 'hi' });
    expect(response.statusCode).toBe(502);
    expect(response.json().detail).toContain('dead-model');
    const usage = (await t.request({ method: 'GET', url: '/api/v1/endpoints/dead-ep/usage', token: owner.token })).json();
    expect(usage[0]).toMatchObject({ sender_email: owner.email, status: 'error', total_cost: 0 });
  });

  test('usage records every query with its costs, newest first', async () => {
    await endpoint('usage-ep', { dataset_id: datasetId, model_id: modelId, response_type: 'both' });
    const answer = (await query('usage-ep', { messages: 'pets', similarity_threshold: 0 })).json();
    await query('usage-ep', { messages: 'rockets', similarity_threshold: 0 });
    const usage = await t.request({ method: 'GET', url: '/api/v1/endpoints/usage-ep/usage', token: owner.token });
    expect(usage.statusCode).toBe(200);
    const rows = usage.json();
    expect(rows).toHaveLength(2);
    const first = rows[1];
    expect(first).toEqual({
      sender_email: owner.email,
      dataset_cost: 0.01,
      model_cost: answer.summary.cost,
      total_cost: expect.closeTo(0.01 + answer.summary.cost, 10),
      tokens: answer.summary.usage.total_tokens,
      status: 'success',
      error: null,
      payment: null,
      created_at: expect.any(String),
    });
    const page = await t.request({ method: 'GET', url: '/api/v1/endpoints/usage-ep/usage?limit=1', token: owner.token });
    expect(page.json()).toMatchObject({ total: 2, skip: 0, limit: 1, items: [rows[0]] });
    expect((await t.request({ method: 'GET', url: '/api/v1/endpoints/usage-ep/usage' })).statusCode).toBe(401);
    expect((await t.request({ method: 'GET', url: '/api/v1/endpoints/usage-ep/usage', token: stranger.token })).statusCode).toBe(404);
  });

  describe('policies', () => {
    test('access allow: only matching e-mails; exact addresses are literal, regexes match whole and ignore case', async () => {
      const ep = await endpoint('allow-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'access',
        configuration: { mode: 'allow', patterns: ['q.owner@example.com', '.*@TRUSTED\\.org'] },
      });
      const denied = await query('allow-ep', { messages: 'x', sender_email: 'q.owner@example.com', user_email: 'someone@trusted.org' });
      expect(denied.statusCode).toBe(403);
      expect(denied.json()).toEqual({
        detail: `Access denied for ${owner.email}`,
        msg: 'Permission Denied',
        err: `Access denied for ${owner.email}`,
        policy_metadata: {
          outcome: 'access_denied',
          entries: [
            {
              policy_type: 'access',
              kind: 'access',
              status: 'rejected',
              amount: null,
              currency: null,
              recipient: null,
              transaction: null,
              reason_code: 'ACCESS_DENIED',
              reason: `Access denied for ${owner.email}`,
              details: {},
            },
          ],
        },
      });
      // The owner's address matches neither the literal (its dot is not a wildcard) nor the regex.
      expect(owner.email).toBe('qowner@example.com');
    });

    test('access allow admits a matching caller; deny refuses one', async () => {
      const allow = await endpoint('allow-owner-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, {
        endpoint_id: allow.id,
        policy_type: 'access',
        configuration: { mode: 'allow', patterns: ['QOWNER@example.com'] },
      });
      expect((await query('allow-owner-ep', { messages: 'x' })).statusCode).toBe(200);
      const deny = await endpoint('deny-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, {
        endpoint_id: deny.id,
        policy_type: 'access',
        configuration: { mode: 'deny', patterns: ['q.*@example\\.com'] },
      });
      expect((await query('deny-ep', { messages: 'x' })).statusCode).toBe(403);
    });

    test('a pattern that backtracks catastrophically elsewhere answers at once here', async () => {
      const ep = await endpoint('redos-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'access',
        configuration: { mode: 'deny', patterns: ['(a+)+$', '(x|x)*y'] },
      });
      const user = await t.user(`${'a'.repeat(40)}b`);
      expect((await query('redos-ep', { messages: 'x' }, user)).statusCode).toBe(404); // another tenant: the policy is not even reached
      expect((await query('redos-ep', { messages: 'x' })).statusCode).toBe(200);
    });

    test('changing or deleting a policy takes effect for the next request', async () => {
      const ep = await endpoint('changing-ep', { dataset_id: datasetId, response_type: 'raw' });
      const policy = await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'access',
        configuration: { mode: 'deny', patterns: [owner.email] },
      });
      expect((await query('changing-ep', { messages: 'x' })).statusCode).toBe(403);
      await t.request({
        method: 'PATCH',
        url: `/api/v1/policies/${policy.id}`,
        token: owner.token,
        payload: { configuration: { mode: 'allow', patterns: [owner.email] } },
      });
      expect((await query('changing-ep', { messages: 'x' })).statusCode).toBe(200);
      await t.request({
        method: 'PATCH',
        url: `/api/v1/policies/${policy.id}`,
        token: owner.token,
        payload: { configuration: { mode: 'allow', patterns: ['other@example.com'] } },
      });
      expect((await query('changing-ep', { messages: 'x' })).statusCode).toBe(403);
      await t.request({ method: 'DELETE', url: `/api/v1/policies/${policy.id}`, token: owner.token });
      expect((await query('changing-ep', { messages: 'x' })).statusCode).toBe(200);
    });

    test('rate_limit: 429 Rate Limited with the maximum and Retry-After', async () => {
      const ep = await endpoint('rate-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, { endpoint_id: ep.id, policy_type: 'rate_limit', configuration: { rate: '2/m' } });
      expect((await query('rate-ep', { messages: 'x' })).statusCode).toBe(200);
      expect((await query('rate-ep', { messages: 'x' })).statusCode).toBe(200);
      const limited = await query('rate-ep', { messages: 'x' });
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toMatchObject({
        detail: 'Maximum 2 requests per minute',
        msg: 'Rate Limited',
        err: 'Maximum 2 requests per minute',
        policy_metadata: {
          outcome: 'rate_limited',
          entries: [{ policy_type: 'rate_limit', status: 'rejected', reason_code: 'RATE_LIMITED' }],
        },
      });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    });

    test('several rate limits all apply, and a refused request uses up none of them', async () => {
      const ep = await endpoint('two-rates-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, { endpoint_id: ep.id, policy_type: 'rate_limit', configuration: { rate: '100/d' } });
      await createPolicy(t, owner, { endpoint_id: ep.id, policy_type: 'rate_limit', configuration: { rate: '1/h' } });
      expect((await query('two-rates-ep', { messages: 'x' })).statusCode).toBe(200);
      const limited = await query('two-rates-ep', { messages: 'x' });
      expect(limited.json().err).toBe('Maximum 1 requests per hour');
      const rows = await t.services.database.db.selectFrom('rate_windows').selectAll().where('key', 'like', 'policy:%').execute();
      const daily = rows.filter((row) => row.count > 0 && row.window_start % 86_400 === 0);
      expect(daily.some((row) => row.count === 1)).toBe(true);
    });

    test('50 concurrent requests against 10/m give exactly 10 successes', async () => {
      const ep = await endpoint('burst-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, { endpoint_id: ep.id, policy_type: 'rate_limit', configuration: { rate: '10/m' } });
      const statuses = await Promise.all(Array.from({ length: 50 }, () => query('burst-ep', { messages: 'x' }).then((r) => r.statusCode)));
      expect(statuses.filter((status) => status === 200)).toHaveLength(10);
      expect(statuses.filter((status) => status === 429)).toHaveLength(40);
    });

    test('policies run access, then rate_limit, then accounting, whatever their creation order', async () => {
      const ep = await endpoint('ordered-ep', { dataset_id: datasetId, response_type: 'raw' });
      await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'accounting',
        configuration: { enabled: true, require_transaction_token: true },
      });
      await createPolicy(t, owner, { endpoint_id: ep.id, policy_type: 'rate_limit', configuration: { rate: '1/m' } });
      await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'access',
        configuration: { mode: 'allow', patterns: [owner.email] },
      });
      const member = await t.user('ordered-member');
      await t.request({
        method: 'POST',
        url: `/api/v1/tenants/${owner.tenant}/members`,
        token: owner.token,
        payload: { email: member.email },
      });
      const asMember = await t.request({
        method: 'POST',
        url: '/api/v1/endpoints/ordered-ep/query',
        token: member.token,
        headers: { 'x-tenant-name': owner.tenant },
        payload: { messages: 'x' },
      });
      expect(asMember.json()).toMatchObject({ msg: 'Permission Denied', err: expect.stringContaining(member.email) }); // access first
      const first = await query('ordered-ep', { messages: 'x' });
      // Accounting after the rate limit passed: the answer lists the policies that ran, the refusing one last.
      expect(first.json()).toMatchObject({
        msg: 'Permission Denied',
        err: 'Transaction token required',
        detail: 'Transaction token required',
      });
      expect(first.json().policy_metadata.outcome).toBe('policy_violation');
      expect(
        first.json().policy_metadata.entries.map((entry: { policy_type: string; status: string }) => [entry.policy_type, entry.status]),
      ).toEqual([
        ['access', 'applied'],
        ['rate_limit', 'applied'],
        ['accounting', 'rejected'],
      ]);
      const second = await query('ordered-ep', { messages: 'x' });
      expect(second.statusCode).toBe(429); // the rate limit comes before accounting
    });

    test('accounting with a required token: created for the most the query can cost, confirmed with the actual cost', async () => {
      await connectMarketplace(t, owner, hub, 'qowner', {
        accounting_url: accounting.url,
        accounting_email: 'owner@accounting.example',
        accounting_password: 'acct-password',
      });
      const ep = await endpoint('paid-ep', { dataset_id: datasetId, model_id: modelId, response_type: 'both' });
      await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'accounting',
        configuration: { enabled: true, require_transaction_token: true },
      });
      accounting.validTokens.add('good-token');
      const before = accounting.calls.length;

      const missing = await query('paid-ep', { messages: 'pets' });
      expect(missing.statusCode).toBe(403);
      expect(missing.json()).toMatchObject({
        detail: 'Transaction token required',
        msg: 'Permission Denied',
        policy_metadata: {
          outcome: 'policy_violation',
          entries: [{ policy_type: 'accounting', kind: 'payment', reason_code: 'PAYMENT_REQUIRED' }],
        },
      });
      const bad = await query('paid-ep', { messages: 'pets', transaction_token: 'forged-token' });
      expect(bad.statusCode).toBe(403);
      expect(bad.json().err).toContain('Invalid transaction token');

      const paid = await query('paid-ep', { messages: 'pets', transaction_token: 'good-token', similarity_threshold: 0 });
      expect(paid.statusCode).toBe(200);
      const body = paid.json();
      const calls = accounting.calls.slice(before);
      const create = calls.filter((call) => call.path === '/transaction/create').at(-1);
      expect(create?.body).toMatchObject({
        senderEmail: owner.email,
        recipientEmail: 'owner@accounting.example',
        token: 'good-token',
        appEpPath: 'paid-ep',
      });
      const actual = body.references.cost + body.summary.cost;
      expect(Number(create?.body.amount)).toBeGreaterThanOrEqual(actual);
      const confirm = calls.find((call) => call.path === '/transaction/confirm');
      expect(confirm?.body.transactionId).toEqual(expect.any(String));
      expect(confirm?.body.amount).toBeCloseTo(actual, 10);
      // What today's SyftHub clients show: what was charged, on which rail, and the total.
      expect(body.cost).toBeCloseTo(actual, 10);
      expect(body.currency).toBe('USD');
      expect(body.policy_metadata).toEqual({
        outcome: 'success',
        entries: [
          {
            policy_type: 'accounting',
            kind: 'payment',
            status: 'charged',
            amount: expect.closeTo(actual, 10),
            currency: 'USD',
            recipient: null,
            transaction: { rail: 'accounting', id: confirm?.body.transactionId, reference: null },
            reason_code: null,
            reason: null,
            details: {},
          },
        ],
      });
    });

    test('a failed query cancels its transaction', async () => {
      const dead = await createModel(t, owner, 'dead2', { model: 'dead-model', base_url: await deadServerUrl(), timeout_ms: 2000 });
      const ep = await endpoint('paid-dead-ep', { model_id: dead.id, response_type: 'summary' });
      await createPolicy(t, owner, {
        endpoint_id: ep.id,
        policy_type: 'accounting',
        configuration: { enabled: true, require_transaction_token: true },
      });
      accounting.validTokens.add('good-token-2');
      const before = accounting.calls.length;
      expect((await query('paid-dead-ep', { messages: 'hi', transaction_token: 'good-token-2' })).statusCode).toBe(502);
      expect(accounting.calls.slice(before).map((call) => call.path)).toEqual(['/transaction/create', '/transaction/cancel']);
    });
  });

  describe('streaming', () => {
    test('references once, OpenAI chunks, a last chunk with usage and costs, then [DONE]', async () => {
      const response = await query('both-ep', { messages: 'pets such as cats', stream: true, similarity_threshold: 0.3 });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toStartWith('text/event-stream');
      const events = sseEvents(response.body);
      expect(events.filter((event) => event.event === 'references')).toHaveLength(1);
      expect(events[0]?.event).toBe('references');
      const references = JSON.parse(events[0]?.data ?? '{}').references;
      expect(references.documents.length).toBeGreaterThan(0);
      expect(events.at(-1)?.data).toBe('[DONE]');
      const chunks = events.slice(1, -1).map((event) => JSON.parse(event.data));
      for (const chunk of chunks)
        expect(chunk).toMatchObject({ object: 'chat.completion.chunk', id: expect.any(String), choices: [{ index: 0 }] });
      const last = chunks.at(-1);
      expect(last.choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'stop' });
      expect(last.usage).toEqual({
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        total_tokens: expect.any(Number),
      });
      expect(last.total_cost).toBeCloseTo(references.cost + last.cost, 10);
      expect(last.policy_metadata).toEqual({ outcome: 'success', entries: [] });
      const text = chunks
        .slice(0, -1)
        .map((chunk) => chunk.choices[0].delta.content)
        .join('');
      expect(text).toBe(FIRST_LINE);
      // The whole answer is never sent again at the end.
      expect(JSON.stringify(last)).not.toContain(FIRST_LINE);
    });

    test('stream content equals the non-stream answer for the same deterministic model', async () => {
      const payload = { messages: 'Hello', stop_sequences: [], max_tokens: 100 };
      const whole = (await query('summary-ep', payload)).json().summary.message.content;
      const streamed = sseEvents((await query('summary-ep', { ...payload, stream: true })).body)
        .filter((event) => !event.event && event.data !== '[DONE]')
        .map((event) => JSON.parse(event.data).choices[0].delta.content ?? '')
        .join('');
      expect(streamed).toBe(whole);
      expect(whole).toBe(FAKE_ANSWER);
    });

    test('a raw endpoint streams its references and a closing chunk', async () => {
      const events = sseEvents((await query('raw-ep', { messages: 'pets', stream: true, similarity_threshold: 0 })).body);
      expect(events.map((event) => event.event ?? 'data')).toEqual(['references', 'data', 'data']);
      expect(JSON.parse(events[1]?.data ?? '{}')).toMatchObject({ total_cost: 0.01, choices: [{ finish_reason: 'stop' }] });
    });

    test('a model failing after the stream began ends with an error event, then [DONE]', async () => {
      fake.behave({ failure: { status: 500, message: 'the fake server broke' } });
      try {
        const response = await query('both-ep', { messages: 'pets', stream: true, similarity_threshold: 0 });
        const events = sseEvents(response.body);
        expect(events[0]?.event).toBe('references');
        const error = events.find((event) => event.event === 'error');
        expect(JSON.parse(error?.data ?? '{}').detail).toContain('fake-model');
        expect(events.at(-1)?.data).toBe('[DONE]');
      } finally {
        fake.behave({});
      }
    });

    test('a policy refusal before the stream is an ordinary 403/429 response', async () => {
      const response = await query('allow-ep', { messages: 'x', stream: true });
      expect(response.statusCode).toBe(403);
      expect(response.json().msg).toBe('Permission Denied');
    });

    test('a client that goes away stops the generation, and the post-hooks still run', async () => {
      const server = await t.app.listen({ port: 0, host: '127.0.0.1' }).catch(() => undefined);
      const address = t.app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      expect(server ?? port).toBeTruthy();
      fake.behave({ chunkDelayMs: 300 });
      try {
        await endpoint('slow-ep', { model_id: modelId, response_type: 'summary' });
        const controller = new AbortController();
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/endpoints/slow-ep/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ messages: 'Hello', stream: true, stop_sequences: [] }),
          signal: controller.signal,
        });
        const reader = response.body?.getReader();
        await reader?.read(); // the first chunk arrived: generation is under way
        controller.abort();
        await waitFor('the model request to be dropped', async () => fake.openResponses === 0, 10_000);
        const usage = await waitFor('the usage record', async () => {
          const rows = (await t.request({ method: 'GET', url: '/api/v1/endpoints/slow-ep/usage', token: owner.token })).json();
          return rows.length > 0 ? rows : undefined;
        });
        expect(usage[0].status).toBe('error');
      } finally {
        fake.behave({});
      }
    });
  });
});

describe('query limits across a restart', () => {
  test('a restart does not reset a rate-limit window', async () => {
    const dataDir = tempDir();
    const first = await createTestApp({}, dataDir);
    const user = await first.user('rate-restart');
    const dataset = await createDataset(first, user, 'kb');
    const ep = await createEndpoint(first, user, { slug: 'restart-ep', dataset_id: dataset.id, response_type: 'raw' });
    // Both apps' clocks stand at the same time: the restart happens inside the window (2 an hour).
    await createPolicy(first, user, { endpoint_id: ep.id, policy_type: 'rate_limit', configuration: { rate: '2/h' } });
    const ask = (app: TestApp) =>
      app.request({ method: 'POST', url: '/api/v1/endpoints/restart-ep/query', token: user.token, payload: { messages: 'x' } });
    expect((await ask(first)).statusCode).toBe(200);
    expect((await ask(first)).statusCode).toBe(200);
    await first.close({ keepData: true });
    const second = await createTestApp({}, dataDir);
    try {
      expect((await ask(second)).statusCode).toBe(429);
    } finally {
      await second.close();
    }
  });

  test('an endpoint without rate_limit policies is governed by the general limits, per caller', async () => {
    // Five a minute: enough for the two users' register and login (counted per IP) and the set-up (per tenant).
    const t = await createTestApp({ SVC_RATE_LIMIT_PER_MINUTE: '5' });
    try {
      const user = await t.user('general-limit');
      const other = await t.user('general-limit-2');
      const model = await createModel(t, user, 'm', { model: 'x', base_url: 'http://127.0.0.1:9/v1' });
      await createEndpoint(t, user, { slug: 'general-ep', model_id: model.id, response_type: 'summary' });
      await t.request({
        method: 'POST',
        url: `/api/v1/tenants/${user.tenant}/members`,
        token: user.token,
        payload: { email: other.email },
      });
      const ask = (who: TestUser) =>
        t.request({
          method: 'POST',
          url: '/api/v1/endpoints/general-ep/query',
          token: who.token,
          headers: { 'x-tenant-name': user.tenant },
          payload: { messages: 'x' },
        });
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await ask(user)).statusCode);
      expect(statuses.slice(0, 5).every((status) => status === 502)).toBe(true); // the model is dead, the limit is not reached
      expect(statuses[5]).toBe(429);
      expect((await ask(other)).statusCode).toBe(502); // another caller has its own budget
    } finally {
      await t.close();
    }
  });
});
