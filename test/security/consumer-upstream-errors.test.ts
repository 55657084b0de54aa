import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';
import { connectMarketplace } from '../helpers/hub.ts';

/**
 * Issue 22, item 5: a marketplace consumer whose query failed at the model read the model's internal base
 * URL and what its server said, in the 502. Consumers now get the status and a plain sentence; the owner
 * still sees the whole reason, in its own test queries and in the endpoint's usage.
 */
describe("security: consumers never read the model's address or its server's words", () => {
  let t: TestApp;
  let owner: TestUser;
  let hub: FakeSyftHub;
  let model: FakeOpenAIServer;
  let token: string;
  const INTERNAL = 'database password hunter2 at 10.0.0.5';

  const ask = (bearer: string, stream = false) =>
    t.request({ method: 'POST', url: '/api/v1/endpoints/chat/query', token: bearer, payload: { messages: 'hello', stream } });

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('upstream-owner');
    hub = await startFakeSyftHub();
    model = startFakeOpenAI();
    await connectMarketplace(t, owner, hub, 'upstreamowner');
    const modelId = (await createModel(t, owner, 'm', { base_url: model.url })).id;
    await createEndpoint(t, owner, { name: 'chat', slug: 'chat', model_id: modelId, response_type: 'summary' });
    const published = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/chat/publish',
      token: owner.token,
      payload: { publish_to_all_marketplaces: true },
    });
    expect(published.statusCode).toBe(200);
    token = await hub.mintToken('carol@consumers.example', 'upstreamowner');
    model.behave({ failure: { status: 500, message: INTERNAL } });
  });
  afterAll(async () => {
    await t.close();
    await hub.close();
    await model.close();
  });

  test('a consumer gets a 502 with a plain sentence: no address, no upstream words', async () => {
    const response = await ask(token);
    expect(response.statusCode).toBe(502);
    expect(response.json().detail).toBe("The endpoint's model could not answer; its owner can see why in the endpoint's usage");
    expect(response.body).not.toContain(INTERNAL);
    expect(response.body).not.toContain('127.0.0.1');
  });

  test('streamed, the error event says the same', async () => {
    const response = await ask(token, true);
    expect(response.body).toContain(
      `event: error\ndata: {"detail":"The endpoint's model could not answer; its owner can see why in the endpoint's usage"}`,
    );
    expect(response.body).not.toContain(INTERNAL);
    expect(response.body).not.toContain('127.0.0.1');
  });

  test('the owner sees the reason, in a test query and in the usage', async () => {
    const own = await ask(owner.token);
    expect(own.statusCode).toBe(502);
    expect(own.json().detail).toContain(INTERNAL);
    const usage = (await t.request({ method: 'GET', url: '/api/v1/endpoints/chat/usage', token: owner.token })).json() as {
      sender_email: string;
      error: string;
    }[];
    expect(usage.find((row) => row.sender_email === 'carol@consumers.example')?.error).toContain(INTERNAL);
  });
});
