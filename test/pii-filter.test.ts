import { Database as SqliteDatabase } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { kyselyAdapter, openDatabase } from '../src/db/database.ts';
import { migrations } from '../src/db/migrations/index.ts';
import { PII_INSTRUCTIONS_MAX } from '../src/policies/configuration-schema.ts';
import { filterTokenBudget, PII_SYSTEM_PROMPT } from '../src/policies/pii-filter-hook.ts';
import { MODEL_FAILED_FOR_CONSUMERS } from '../src/query/consumer-errors.ts';
import { type FakeAccounting, startFakeAccounting } from './fakes/accounting-server.ts';
import { type FakeHubWallet, startFakeHubWallet } from './fakes/hub-wallet.ts';
import { type FakeOpenAIServer, fakeTokens, type RecordedRequest, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { type FakeTempoRpc, startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser, validationIssues } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';
import { createEndpoint, createModel, createPolicy } from './helpers/fixtures.ts';
import { connectMarketplace } from './helpers/hub.ts';
import { sseEvents } from './helpers/streams.ts';

/**
 * The `pii_filter` policy (issue 27, item 4; API-CONTRACT 10.4): the endpoint's own model is asked to replace
 * personal data in the generated answer with [REDACTED] before anything of it leaves. The model double answers
 * the query with an answer full of personal data, and the filter's call (recognised by its instructions) as a
 * model that follows them would. One job, over 400 lines: every rule of API-CONTRACT 10.4 through the API, with the
 * accounting, MPP and marketplace doubles a rule needs (the type's row on PostgreSQL: postgres-policy-types.test.ts).
 */

const PERSONAL = 'Ada Lovelace wrote to ada@example.org and answered on +44 20 7946 0958.';
const ANSWER = `The notes say: ${PERSONAL}`;
const FILTERED = 'The notes say: [REDACTED] wrote to [REDACTED] and answered on [REDACTED].';

type Message = { role: string; content: string };

/** Whether a chat is the filter's: its instructions are the filter's own. */
const isFilterCall = (messages: Message[]) =>
  messages.some((message) => message.role === 'system' && message.content === PII_SYSTEM_PROMPT) ||
  messages.some((message) => message.role === 'system' && message.content.startsWith(`${PII_SYSTEM_PROMPT}\n\n`));

/** The text the filter was given: its user message after the line that introduces it. */
const filteredText = (messages: Message[]) =>
  (messages.find((message) => message.role === 'user')?.content ?? '').replace(/^[^\n]*\n\n/, '');

/** A model that follows the filter's instructions: names, e-mails and phone numbers replaced. */
function redact(text: string): string {
  return text
    .replaceAll('Ada Lovelace', '[REDACTED]')
    .replace(/[\w.+-]+@[\w-]+(\.[\w-]+)+/g, '[REDACTED]')
    .replace(/\+\d[\d ]+\d/g, '[REDACTED]');
}

const followsInstructions = (messages: Message[]) => (isFilterCall(messages) ? redact(filteredText(messages)) : undefined);

describe('the pii_filter policy', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let fake: FakeOpenAIServer;
  let hub: FakeSyftHub;
  let accounting: FakeAccounting;
  let modelId: string;
  let dataset: Dataset;

  const query = (slug: string, payload: object, token = owner.token) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token, payload: { stop_sequences: [], ...payload } });
  const chats = () => fake.requests.filter((request) => request.path.endsWith('/chat/completions'));
  const messagesOf = (request: RecordedRequest | undefined) => (request?.body?.messages ?? []) as Message[];
  const usage = async (slug: string) =>
    (await t.request({ method: 'GET', url: `/api/v1/endpoints/${slug}/usage`, token: owner.token })).json() as {
      sender_email: string;
      model_cost: number;
      total_cost: number;
      tokens: number;
      status: string;
      error: string | null;
    }[];
  const policy = (endpointId: string, configuration: unknown, user = owner) =>
    t.request({
      method: 'POST',
      url: '/api/v1/policies/',
      token: user.token,
      payload: { name: 'no personal data', policy_type: 'pii_filter', endpoint_id: endpointId, configuration },
    });
  /** An endpoint that answers with the model, with a PII filter. */
  const filtered = async (slug: string, configuration: Record<string, unknown> = {}, body: Record<string, unknown> = {}) => {
    const endpoint = await createEndpoint(t, owner, { name: slug, slug, model_id: modelId, response_type: 'summary', ...body });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'pii_filter', configuration });
    return endpoint;
  };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('pii-owner');
    stranger = await t.user('pii-stranger');
    fake = startFakeOpenAI({ answer: ANSWER });
    fake.behave({ reply: followsInstructions });
    hub = await startFakeSyftHub();
    accounting = startFakeAccounting('owner@accounting.example', 'acct-password');
    await connectMarketplace(t, owner, hub, 'piiowner', {
      accounting_url: accounting.url,
      accounting_email: 'owner@accounting.example',
      accounting_password: 'acct-password',
    });
    modelId = (
      await createModel(t, owner, 'priced', {
        model: 'fake-model',
        base_url: fake.url,
        cost_per_1k_prompt_tokens: 1,
        cost_per_1k_completion_tokens: 2,
      })
    ).id;
    dataset = await Dataset.create(t, owner);
    writeFileSync(join(dataset.folder, 'letters.txt'), `Letters of the analyst. ${PERSONAL}`);
    await dataset.indexed();
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await hub.close();
    await accounting.close();
  });

  test('is a policy type of GET /api/v1/types, with its bounded instructions', async () => {
    const types = (await t.request({ method: 'GET', url: '/api/v1/types?kind=policy', token: owner.token })).json();
    const pii = types.policy.find((type: { type: string }) => type.type === 'pii_filter');
    expect(pii.description).toContain('[REDACTED]');
    expect(pii.configuration_schema.properties.instructions).toMatchObject({
      type: 'string',
      maxLength: PII_INSTRUCTIONS_MAX,
      default: '',
    });
    expect(pii.configuration_schema.properties.instructions.description).toContain('e-mail addresses, phone numbers, postal addresses');
    expect(pii.configuration_schema.required ?? []).toEqual([]);
  });

  test('the answer leaves with its personal data replaced, and its entry says what was redacted', async () => {
    await filtered('filtered');
    const before = chats().length;
    const response = await query('filtered', { messages: 'Who wrote to whom?' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.summary.message.content).toBe(FILTERED);
    expect(response.body).not.toContain('ada@example.org');
    expect(body.policy_metadata).toEqual({
      outcome: 'success',
      entries: [
        {
          policy_type: 'pii_filter',
          kind: 'transform',
          status: 'applied',
          amount: null,
          currency: null,
          recipient: null,
          transaction: null,
          reason_code: null,
          reason: null,
          details: {
            redacted: true,
            redactions: 3,
            prompt_tokens: expect.any(Number),
            completion_tokens: fakeTokens(FILTERED).length,
            cost: expect.any(Number),
          },
        },
      ],
    });
    // Two calls of the endpoint's model: the answer, then the filter with the answer as its text.
    const [generation, filter] = chats().slice(before);
    expect(chats().length - before).toBe(2);
    expect(isFilterCall(messagesOf(generation))).toBe(false);
    expect(messagesOf(filter)).toEqual([
      { role: 'system', content: PII_SYSTEM_PROMPT },
      { role: 'user', content: `Replace the personal data in this text:\n\n${ANSWER}` },
    ]);
    expect(filter?.body).toMatchObject({ temperature: 0, max_tokens: filterTokenBudget(fakeTokens(ANSWER).length) });
    expect(filter?.body?.stop ?? []).toEqual([]);
  });

  test('an answer without personal data is sent as it is, its entry saying nothing was redacted', async () => {
    await filtered('nothing-personal');
    fake.behave({ reply: (messages) => (isFilterCall(messages) ? filteredText(messages) : 'The notes are about engines.') });
    try {
      const body = (await query('nothing-personal', { messages: 'What are the notes about?' })).json();
      expect(body.summary.message.content).toBe('The notes are about engines.');
      expect(body.policy_metadata.entries[0]).toMatchObject({ status: 'applied', details: { redacted: false, redactions: 0 } });
    } finally {
      fake.behave({ reply: followsInstructions });
    }
  });

  test("an owner's instructions are added to the filter's own; several filters make one call", async () => {
    const endpoint = await filtered('instructed', { instructions: 'Also replace the word engines.' });
    await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'pii_filter',
      configuration: { instructions: '  Keep the dates.  ' },
    });
    await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'pii_filter', configuration: {} });
    const before = chats().length;
    const body = (await query('instructed', { messages: 'x' })).json();
    expect(chats().length - before).toBe(2);
    expect(messagesOf(chats().at(-1))[0]?.content).toBe(
      `${PII_SYSTEM_PROMPT}\n\nThe publisher adds:\nAlso replace the word engines.\nKeep the dates.`,
    );
    expect(body.policy_metadata.entries.map((entry: { policy_type: string }) => entry.policy_type)).toEqual(['pii_filter']);
  });

  test("the passages of an endpoint that also answers are the publisher's own documents: sent as they are", async () => {
    await filtered('with-sources', {}, { dataset_id: dataset.id, response_type: 'both' });
    const body = (
      await query('with-sources', {
        messages: 'letters of the analyst',
        similarity_threshold: 0,
        extras: { reference_options: { mode: 'keyword' } },
      })
    ).json();
    expect(body.summary.message.content).toBe(FILTERED);
    expect(body.references.documents[0].content).toContain('ada@example.org');
  });

  test('its model call is counted: in the summary, the usage row and what an accounting policy confirms', async () => {
    const endpoint = await filtered('counted');
    await createPolicy(t, owner, {
      endpoint_id: endpoint.id,
      policy_type: 'accounting',
      configuration: { require_transaction_token: true },
    });
    accounting.validTokens.add('pii-token');
    const before = chats().length;
    const calls = accounting.calls.length;
    const response = await query('counted', { messages: 'Who wrote?', transaction_token: 'pii-token' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    const [generation, filter] = chats().slice(before);
    const prompt = (request: RecordedRequest | undefined) =>
      messagesOf(request).reduce((sum, message) => sum + fakeTokens(message.content).length, 0);
    const promptTokens = prompt(generation) + prompt(filter);
    const completionTokens = fakeTokens(ANSWER).length + fakeTokens(FILTERED).length;
    expect(body.summary.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    });
    const cost = promptTokens / 1000 + (completionTokens * 2) / 1000;
    expect(body.summary.cost).toBeCloseTo(cost, 10);
    expect(body.cost).toBeCloseTo(cost, 10);
    const filterEntry = body.policy_metadata.entries.find((entry: { policy_type: string }) => entry.policy_type === 'pii_filter');
    expect(filterEntry.details).toMatchObject({ prompt_tokens: prompt(filter), completion_tokens: fakeTokens(FILTERED).length });
    expect(filterEntry.details.cost).toBeCloseTo(prompt(filter) / 1000 + (fakeTokens(FILTERED).length * 2) / 1000, 10);

    const [row] = await usage('counted');
    expect(row).toMatchObject({ status: 'success', tokens: promptTokens + completionTokens });
    expect(row?.model_cost).toBeCloseTo(cost, 10);
    // The transaction was created for the most the query can cost, the filter's call included, and confirmed with the cost.
    const [create, confirm] = accounting.calls.slice(calls);
    expect(create?.path).toBe('/transaction/create');
    expect(Number(create?.body.amount)).toBeGreaterThanOrEqual(cost);
    expect(confirm?.path).toBe('/transaction/confirm');
    expect(confirm?.body.amount).toBeCloseTo(cost, 10);
  });

  describe('when the filter cannot run, the answer is not sent', () => {
    let consumerToken: string;

    beforeAll(async () => {
      const endpoint = await filtered('guarded');
      await createPolicy(t, owner, {
        endpoint_id: endpoint.id,
        policy_type: 'accounting',
        configuration: { require_transaction_token: true },
      });
      accounting.validTokens.add('guarded-token');
      const published = await t.request({
        method: 'POST',
        url: '/api/v1/endpoints/guarded/publish',
        token: owner.token,
        payload: { publish_to_all_marketplaces: true },
      });
      expect(published.statusCode).toBe(200);
      consumerToken = await hub.mintToken('carol@consumers.example', 'piiowner');
      fake.behave({
        reply: followsInstructions,
        failWhen: { test: isFilterCall, failure: { status: 500, message: 'filter model at 10.0.0.5 is out of memory' } },
      });
    });
    afterAll(() => fake.behave({ reply: followsInstructions }));

    test('a failed filter call is a 502: the owner reads why, a consumer a plain sentence, nobody the answer', async () => {
      const own = await query('guarded', { messages: 'Who wrote?', transaction_token: 'guarded-token' });
      expect(own.statusCode).toBe(502);
      expect(own.json().detail).toStartWith('The PII filter: ');
      expect(own.json().detail).toContain('out of memory');
      expect(own.body).not.toContain('ada@example.org');

      const consumer = await query('guarded', { messages: 'Who wrote?', transaction_token: 'guarded-token' }, consumerToken);
      expect(consumer.statusCode).toBe(502);
      expect(consumer.json().detail).toBe(MODEL_FAILED_FOR_CONSUMERS);
      expect(consumer.body).not.toContain('ada@example.org');
      expect(consumer.body).not.toContain('10.0.0.5');

      const rows = await usage('guarded');
      expect(rows.map((row) => [row.status, row.model_cost, row.total_cost])).toEqual([
        ['error', 0, 0],
        ['error', 0, 0],
      ]);
      expect(rows.find((row) => row.sender_email === 'carol@consumers.example')?.error).toContain('out of memory');
    });

    test('nothing is charged: the transaction is cancelled, never confirmed', async () => {
      const calls = accounting.calls.length;
      expect((await query('guarded', { messages: 'Who wrote?', transaction_token: 'guarded-token' })).statusCode).toBe(502);
      expect(accounting.calls.slice(calls).map((call) => call.path)).toEqual(['/transaction/create', '/transaction/cancel']);
    });

    test('streamed, it is a plain 502 too: the stream is held until the answer is filtered', async () => {
      const response = await query('guarded', { messages: 'Who wrote?', transaction_token: 'guarded-token', stream: true }, consumerToken);
      expect(response.statusCode).toBe(502);
      expect(response.json().detail).toBe(MODEL_FAILED_FOR_CONSUMERS);
      expect(response.body).not.toContain('ada@example.org');
    });

    test('a filtered text cut short is a failure too, not a shorter answer', async () => {
      await filtered('cut-short');
      fake.behave({ reply: (messages) => (isFilterCall(messages) ? 'word '.repeat(1000) : undefined) });
      const response = await query('cut-short', { messages: 'Who wrote?' });
      expect(response.statusCode).toBe(502);
      expect(response.json().detail).toContain("The PII filter's model stopped at");
      expect(response.body).not.toContain('ada@example.org');
      fake.behave({
        reply: followsInstructions,
        failWhen: { test: isFilterCall, failure: { status: 500, message: 'filter model at 10.0.0.5 is out of memory' } },
      });
    });
  });

  describe('a paid query (MPP): the filter runs before the payment is collected', () => {
    let rpc: FakeTempoRpc;
    let wallet: FakeHubWallet;
    let consumer: { token: string; address: `0x${string}` };

    const paidQuery = (payment?: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/endpoints/paid-filtered/query',
        token: owner.token,
        headers: payment ? { 'x-payment': payment } : {},
        payload: { messages: 'Who wrote?', stop_sequences: [] },
      });

    beforeAll(async () => {
      rpc = startFakeTempoRpc();
      wallet = startFakeHubWallet(rpc.url);
      consumer = wallet.addConsumer('carol');
      const set = await t.request({
        method: 'POST',
        url: '/api/v1/settings/wallet',
        token: owner.token,
        payload: { wallet_address: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00', testnet: true, rpc_url: rpc.url },
      });
      expect(set.statusCode).toBe(200);
      const endpoint = await filtered('paid-filtered');
      await createPolicy(t, owner, { endpoint_id: endpoint.id, policy_type: 'mpp', configuration: { price: 0.01 } });
    });
    afterAll(async () => {
      fake.behave({ reply: followsInstructions });
      await wallet.close();
      await rpc.close();
    });

    test('a failed filter broadcasts nothing, and the same credential then pays for the filtered answer', async () => {
      const challenged = await paidQuery();
      expect(challenged.statusCode).toBe(402);
      const signed = await fetch(`${wallet.url}/api/v1/wallet/pay`, {
        method: 'POST',
        headers: { authorization: `Bearer ${consumer.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ www_authenticate: challenged.headers['www-authenticate'], endpoint_slug: 'paid-filtered' }),
      });
      const payment = ((await signed.json()) as { x_payment: string }).x_payment;
      const broadcasts = rpc.broadcasts.length;

      fake.behave({ reply: followsInstructions, failWhen: { test: isFilterCall, failure: { status: 500, message: 'filter down' } } });
      const failed = await paidQuery(payment);
      expect(failed.statusCode).toBe(502);
      expect(failed.body).not.toContain('ada@example.org');
      expect(rpc.broadcasts).toHaveLength(broadcasts);

      fake.behave({ reply: followsInstructions });
      const answered = await paidQuery(payment);
      expect(answered.statusCode).toBe(200);
      expect(rpc.broadcasts).toHaveLength(broadcasts + 1);
      const body = answered.json();
      expect(body.summary.message.content).toBe(FILTERED);
      expect(
        body.policy_metadata.entries.map((entry: { policy_type: string; status: string }) => [entry.policy_type, entry.status]),
      ).toEqual([
        ['mpp', 'charged'],
        ['pii_filter', 'applied'],
      ]);
      expect(body.cost).toBeCloseTo(0.01 + body.summary.cost, 10);
    });
  });

  test('a streamed answer is generated whole, filtered, then sent: no delta carries the unfiltered text', async () => {
    await filtered('streamed');
    const response = await query('streamed', { messages: 'Who wrote?', stream: true });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toStartWith('text/event-stream');
    expect(response.body).not.toContain('ada@example.org');
    expect(response.body).not.toContain('Lovelace');
    const events = sseEvents(response.body);
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event.data));
    const text = chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? '').join('');
    expect(text).toBe(FILTERED);
    const last = chunks.at(-1);
    expect(last.usage.completion_tokens).toBe(fakeTokens(ANSWER).length + fakeTokens(FILTERED).length);
    expect(last.policy_metadata.entries).toEqual([expect.objectContaining({ policy_type: 'pii_filter', status: 'applied' })]);
  });

  test('is refused (422) on an endpoint that does not answer with a model, and taken where one does', async () => {
    const search = await createEndpoint(t, owner, {
      name: 'search only',
      slug: 'search-only',
      dataset_id: dataset.id,
      response_type: 'raw',
    });
    const refused = await policy(search.id, {});
    expect(validationIssues(refused)).toEqual([
      {
        loc: ['body', 'policy_type'],
        msg: "A PII filter needs an endpoint that answers with a model (response type 'summary' or 'both'): the passages of a search are sent as they are",
        type: 'value_error',
      },
    ]);
    // An endpoint with a model that only searches does not generate either.
    const rawWithModel = await createEndpoint(t, owner, {
      name: 'raw with model',
      slug: 'raw-with-model',
      dataset_id: dataset.id,
      model_id: modelId,
      response_type: 'raw',
    });
    expect(issueLocs(await policy(rawWithModel.id, {}))).toEqual(['body.policy_type']);
    const answers = await createEndpoint(t, owner, {
      name: 'answers',
      slug: 'answers',
      dataset_id: dataset.id,
      model_id: modelId,
      response_type: 'both',
    });
    const created = await policy(answers.id, { instructions: 'Also replace customer numbers.', unknown: 1 });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ policy_type: 'pii_filter', configuration: { instructions: 'Also replace customer numbers.' } });
    expect(created.json().configuration).not.toHaveProperty('unknown');
    expect((await policy(answers.id, { instructions: null })).json().configuration).toEqual({ instructions: '' });
  });

  test('a configuration that breaks its schema is a 422 with loc, msg and type', async () => {
    const endpoint = await createEndpoint(t, owner, { name: 'checked', slug: 'checked', model_id: modelId, response_type: 'summary' });
    const tooLong = validationIssues(await policy(endpoint.id, { instructions: 'x'.repeat(PII_INSTRUCTIONS_MAX + 1) }));
    expect(tooLong).toEqual([
      { loc: ['body', 'configuration', 'instructions'], msg: expect.stringContaining(`${PII_INSTRUCTIONS_MAX}`), type: expect.any(String) },
    ]);
    expect(issueLocs(await policy(endpoint.id, { instructions: 42 }))).toEqual(['body.configuration.instructions']);
    const created = await policy(endpoint.id, { instructions: 'Also replace customer numbers.' });
    const patched = await t.request({
      method: 'PATCH',
      url: `/api/v1/policies/${created.json().id}`,
      token: owner.token,
      payload: { configuration: { instructions: ['not', 'text'] } },
    });
    expect(issueLocs(patched)).toEqual(['body.configuration.instructions']);
    const kept = await t.request({ method: 'GET', url: `/api/v1/policies/${created.json().id}`, token: owner.token });
    expect(kept.json().configuration).toEqual({ instructions: 'Also replace customer numbers.' });
  });

  test('another tenant can neither add one to an endpoint nor read, change or delete one (404)', async () => {
    const endpoint = await createEndpoint(t, owner, { name: 'private', slug: 'private', model_id: modelId, response_type: 'summary' });
    expect((await policy(endpoint.id, {}, stranger)).statusCode).toBe(404);
    const mine = (await policy(endpoint.id, {})).json();
    const as = (method: 'GET' | 'PATCH' | 'DELETE', payload?: object) =>
      t.request({ method, url: `/api/v1/policies/${mine.id}`, token: stranger.token, ...(payload ? { payload } : {}) });
    expect((await as('GET')).statusCode).toBe(404);
    expect((await as('PATCH', { configuration: { instructions: '' } })).statusCode).toBe(404);
    expect((await as('DELETE')).statusCode).toBe(404);
    const kept = await t.request({ method: 'GET', url: `/api/v1/policies/${mine.id}`, token: owner.token });
    expect(kept.json().configuration).toEqual({ instructions: '' });
  });
});

describe('the pii_filter policy type in the database', () => {
  test("SQLite's rebuild (0017) keeps every policy, its order and its references, and takes the new type", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'knode-pii-upgrade-'));
    try {
      const sqlite = new SqliteDatabase(join(dataDir, 'knode.db'), { create: true });
      const legacy = new Kysely<unknown>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
      const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0017'));
      expect((await new Migrator({ db: legacy, provider: { getMigrations: async () => before } }).migrateToLatest()).error).toBeUndefined();
      const at = '2026-01-01T00:00:00.000Z';
      sqlite.run(`INSERT INTO tenants (id, name, created_at) VALUES ('t', 'acme', '${at}')`);
      sqlite.run(
        `INSERT INTO models (id, tenant_id, name, dtype, configuration, created_at, updated_at) VALUES ('m', 't', 'm', 'openai', '{}', '${at}', '${at}')`,
      );
      sqlite.run(`INSERT INTO endpoints (id, tenant_id, name, slug, model_id, response_type, created_at, updated_at)
                  VALUES ('e', 't', 'e', 'e', 'm', 'summary', '${at}', '${at}')`);
      // Inserted in this order in one millisecond, with ids that sort the other way round.
      for (const id of ['p-z', 'p-a']) {
        sqlite.run(`INSERT INTO policies (id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at)
                    VALUES ('${id}', 't', 'e', '${id}', 'rate_limit', '{"rate":"1/s"}', '${at}', '${at}')`);
      }
      expect(() =>
        sqlite.run(`INSERT INTO policies (id, tenant_id, endpoint_id, name, policy_type, configuration, created_at, updated_at)
                    VALUES ('p-x', 't', 'e', 'x', 'pii_filter', '{}', '${at}', '${at}')`),
      ).toThrow('CHECK constraint failed');
      await legacy.destroy();

      const database = await openDatabase(dataDir);
      try {
        const { db } = database;
        await db
          .insertInto('policies')
          .values({
            id: 'p-m',
            tenant_id: 't',
            endpoint_id: 'e',
            name: 'p-m',
            policy_type: 'pii_filter',
            configuration: '{}',
            created_at: at,
            updated_at: at,
          })
          .execute();
        const rows = await db.selectFrom('policies').select(['id', 'seq', 'policy_type']).orderBy('created_at').orderBy('seq').execute();
        expect(rows).toEqual([
          { id: 'p-z', seq: 1, policy_type: 'rate_limit' },
          { id: 'p-a', seq: 2, policy_type: 'rate_limit' },
          { id: 'p-m', seq: 3, policy_type: 'pii_filter' },
        ]);
        const unknown = db
          .insertInto('policies')
          .values({
            id: 'p-y',
            tenant_id: 't',
            endpoint_id: 'e',
            name: 'y',
            policy_type: 'telepathy' as 'mpp',
            configuration: '{}',
            created_at: at,
            updated_at: at,
          })
          .execute();
        await expect(unknown).rejects.toThrow('CHECK constraint failed');
        // The rebuilt table still belongs to its endpoint: deleting the endpoint deletes its policies.
        await db.deleteFrom('endpoints').where('id', '=', 'e').execute();
        expect(await db.selectFrom('policies').select('id').execute()).toEqual([]);
      } finally {
        await database.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
