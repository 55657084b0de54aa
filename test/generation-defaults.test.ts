import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';
import { createEndpoint, createModel } from './helpers/fixtures.ts';

/**
 * An endpoint's `generation_defaults` (API-CONTRACT 4): what a query that omits a generation field gets,
 * before the specification's defaults. The SyftHub SDK's model calls send no `stop_sequences`, and the
 * specification's default (one newline) would cut every answer to its first line.
 */
describe('generation defaults of an endpoint', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let fake: FakeOpenAIServer;
  let modelId: string;

  const query = (slug: string, payload: object) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token: owner.token, payload });
  /** What the model server received for the last chat. */
  const lastChat = () => fake.requests.filter((request) => request.path.endsWith('/chat/completions')).at(-1)?.body ?? {};

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('gen-owner');
    stranger = await t.user('gen-stranger');
    fake = startFakeOpenAI();
    modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url })).id;
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  test('are kept on create, shown in every view, replaced by PATCH and cleared with {}', async () => {
    const defaults = { system_prompt: 'Answer like a librarian.', temperature: 0.2, max_tokens: 300, stop_sequences: [] };
    const created = await createEndpoint(t, owner, {
      slug: 'librarian',
      model_id: modelId,
      response_type: 'summary',
      generation_defaults: defaults,
    });
    expect((created as unknown as { generation_defaults: unknown }).generation_defaults).toEqual(defaults);
    const detail = await t.request({ method: 'GET', url: '/api/v1/endpoints/librarian', token: owner.token });
    expect(detail.json().generation_defaults).toEqual(defaults);
    const list = await t.request({ method: 'GET', url: '/api/v1/endpoints/', token: owner.token });
    expect(list.json().find((item: { slug: string }) => item.slug === 'librarian').generation_defaults).toEqual(defaults);

    const patched = await t.request({
      method: 'PATCH',
      url: '/api/v1/endpoints/librarian',
      token: owner.token,
      payload: { generation_defaults: { temperature: 1.5 } },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().generation_defaults).toEqual({ temperature: 1.5 });
    const cleared = await t.request({
      method: 'PATCH',
      url: '/api/v1/endpoints/librarian',
      token: owner.token,
      payload: { generation_defaults: {} },
    });
    expect(cleared.json().generation_defaults).toEqual({});
  });

  test('are checked like the query fields (422), and another tenant cannot change them (404)', async () => {
    await createEndpoint(t, owner, { slug: 'checked', model_id: modelId, response_type: 'summary' });
    const patch = (payload: object, token = owner.token) =>
      t.request({ method: 'PATCH', url: '/api/v1/endpoints/checked', token, payload });
    expect(issueLocs(await patch({ generation_defaults: { temperature: 3 } }))).toEqual(['body.generation_defaults.temperature']);
    expect(issueLocs(await patch({ generation_defaults: { max_tokens: 0 } }))).toEqual(['body.generation_defaults.max_tokens']);
    expect(issueLocs(await patch({ generation_defaults: { stop_sequences: 'x' } }))).toEqual(['body.generation_defaults.stop_sequences']);
    expect(issueLocs(await patch({ generation_defaults: { top_k: 3 } }))).toEqual(['body.generation_defaults.top_k']);
    expect((await patch({ generation_defaults: { temperature: 1 } }, stranger.token)).statusCode).toBe(404);
    expect((await t.request({ method: 'PATCH', url: '/api/v1/endpoints/checked', payload: { generation_defaults: {} } })).statusCode).toBe(
      401,
    );
  });

  test('a query that omits a field gets the endpoint default; a field it sends wins', async () => {
    await createEndpoint(t, owner, {
      slug: 'defaulted',
      model_id: modelId,
      response_type: 'summary',
      generation_defaults: { system_prompt: 'Be brief.', temperature: 0.1, max_tokens: 42, stop_sequences: [] },
    });
    expect((await query('defaulted', { messages: 'Hello' })).statusCode).toBe(200);
    const sent = lastChat();
    expect(sent).toMatchObject({ temperature: 0.1, max_tokens: 42 });
    expect(sent.stop ?? []).toEqual([]);
    expect((sent.messages as { role: string; content: string }[])[0]).toEqual({ role: 'system', content: 'Be brief.' });

    await query('defaulted', { messages: 'Hello', temperature: 0.9, max_tokens: 7, stop_sequences: ['END'] });
    expect(lastChat()).toMatchObject({ temperature: 0.9, max_tokens: 7, stop: ['END'] });
  });

  test('without defaults a query gets the specification defaults', async () => {
    await createEndpoint(t, owner, { slug: 'plain', model_id: modelId, response_type: 'summary' });
    await query('plain', { messages: 'Hello' });
    expect(lastChat()).toMatchObject({ temperature: 0.7, max_tokens: 100, stop: ['\n'] });
    expect((lastChat().messages as { role: string }[])[0]?.role).toBe('user');
  });
});
