import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { writeTinyGguf } from '../scripts/fixtures/make-tiny-gguf.ts';
import { deadServerUrl, FAKE_ANSWER, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, issueLocs, type TestApp, type TestUser } from './helpers/app.ts';

describe('model health and test routes', () => {
  let t: TestApp;
  let owner: TestUser;
  let stranger: TestUser;
  let fake: FakeOpenAIServer;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('modelowner');
    stranger = await t.user('modelstranger');
    fake = startFakeOpenAI({ apiKey: 'sk-fake-key' });
  });
  afterAll(async () => {
    await fake.close();
    await t.close();
  });

  const createModel = async (dtype: string, configuration: Record<string, unknown>) => {
    const response = await t.request({
      method: 'POST',
      url: '/api/v1/models/',
      token: owner.token,
      payload: { name: 'm', dtype, configuration },
    });
    expect(response.statusCode).toBe(201);
    return response.json().id as string;
  };

  test('an OpenAI-compatible model that answers is healthy, and /test generates with it', async () => {
    const id = await createModel('openai', {
      model: 'fake-model',
      base_url: fake.url,
      api_key: 'sk-fake-key',
      cost_per_1k_completion_tokens: 2,
    });
    const health = await t.request({ method: 'GET', url: `/api/v1/models/${id}/health`, token: owner.token });
    expect(health.statusCode).toBe(200);
    expect(health.json().healthy).toBe(true);
    const test = await t.request({
      method: 'POST',
      url: `/api/v1/models/${id}/test`,
      token: owner.token,
      payload: { prompt: 'Hi there', max_tokens: 50 },
    });
    expect(test.statusCode).toBe(200);
    const summary = test.json();
    expect(summary.message.content).toBe(FAKE_ANSWER);
    expect(summary.usage.completion_tokens).toBe(summary.message.tokens);
    expect(summary.cost).toBeCloseTo((summary.usage.completion_tokens / 1000) * 2, 10);
    expect(summary.provider_info.response_time_ms).toEqual(expect.any(Number));
  });

  test('a bare POST /test uses the default prompt', async () => {
    const id = await createModel('openai', { model: 'fake-model', base_url: fake.url, api_key: 'sk-fake-key' });
    const test = await t.request({ method: 'POST', url: `/api/v1/models/${id}/test`, token: owner.token });
    expect(test.statusCode).toBe(200);
  });

  test('a dead server is unhealthy, and /test answers 502 naming the model, never the key', async () => {
    const id = await createModel('openai', {
      model: 'ghost',
      base_url: await deadServerUrl(),
      api_key: 'sk-very-secret-key',
      timeout_ms: 2000,
    });
    const health = await t.request({ method: 'GET', url: `/api/v1/models/${id}/health`, token: owner.token });
    expect(health.json()).toEqual({ healthy: false, message: expect.any(String) });
    const test = await t.request({ method: 'POST', url: `/api/v1/models/${id}/test`, token: owner.token, payload: {} });
    expect(test.statusCode).toBe(502);
    expect(test.json().detail).toContain('ghost');
    expect(test.body).not.toContain('sk-very-secret-key');
  });

  test('a wrong API key is a 502 whose detail carries the server reason but not the key', async () => {
    const id = await createModel('openai', { model: 'fake-model', base_url: fake.url, api_key: 'sk-wrong-key-123456' });
    const test = await t.request({ method: 'POST', url: `/api/v1/models/${id}/test`, token: owner.token, payload: {} });
    expect(test.statusCode).toBe(502);
    expect(test.body).not.toContain('sk-wrong-key-123456');
  });

  test('a local GGUF model answers through node-llama-cpp', async () => {
    const path = writeTinyGguf(join(t.dataDir, 'tiny.gguf'));
    const id = await createModel('llama_cpp', { model_path: path, threads: 1 });
    const health = await t.request({ method: 'GET', url: `/api/v1/models/${id}/health`, token: owner.token });
    expect(health.json().healthy).toBe(true);
    const test = await t.request({
      method: 'POST',
      url: `/api/v1/models/${id}/test`,
      token: owner.token,
      payload: { prompt: 'Hello', max_tokens: 8 },
    });
    expect(test.statusCode).toBe(200);
    expect(test.json()).toMatchObject({ model: 'tiny.gguf', finish_reason: 'length', message: { role: 'assistant', tokens: 8 } });
  });

  test('validates the test body', async () => {
    const id = await createModel('openai', { model: 'fake-model', base_url: fake.url });
    expect(
      issueLocs(
        await t.request({ method: 'POST', url: `/api/v1/models/${id}/test`, token: owner.token, payload: { max_tokens: 0, prompt: '' } }),
      ).sort(),
    ).toEqual(['body.max_tokens', 'body.prompt']);
  });

  test('401 without credentials, 404 for another tenant', async () => {
    const id = await createModel('openai', { model: 'fake-model', base_url: fake.url });
    for (const [method, url] of [
      ['GET', `/api/v1/models/${id}/health`],
      ['POST', `/api/v1/models/${id}/test`],
    ] as const) {
      expect((await t.request({ method, url })).statusCode).toBe(401);
      expect((await t.request({ method, url, token: stranger.token })).statusCode).toBe(404);
    }
  });
});
