/**
 * The openai provider against the OpenAI-compatible test double (test/fakes/openai-server.ts): answers
 * streamed and not, usage, stop sequences, errors that name the model and never the key, timeouts
 * of dead and slow servers, aborts, and configuration rules.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import OpenAI from 'openai';
import { LocalModelRegistry } from '../src/llm/llama-cpp/model-registry.ts';
import { modelSettings, withModelDefaults } from '../src/llm/model-config.ts';
import { OpenAIChatProvider } from '../src/llm/openai.ts';
import { type ChatMessage, type ChatOptions, ModelError, ModelTimeoutError } from '../src/llm/provider.ts';
import { createProvider } from '../src/llm/registry.ts';
import { deadServerUrl, FAKE_ANSWER, type FakeOpenAIServer, fakeEmbedding, fakeTokens, startFakeOpenAI } from './fakes/openai-server.ts';
import { validateModelConfiguration } from './helpers/model-configuration.ts';
import { collect } from './helpers/streams.ts';

const API_KEY = 'sk-test-0123456789abcdefSECRET';
let server: FakeOpenAIServer;
let keyed: FakeOpenAIServer;

const provider = (extra: Record<string, unknown> = {}) =>
  new OpenAIChatProvider(withModelDefaults('openai', { model: 'fake-model', base_url: server.url, ...extra }));

const options = (extra: Partial<ChatOptions> = {}): ChatOptions => ({
  max_tokens: 100,
  temperature: 0.7,
  stop_sequences: [],
  presence_penalty: 0,
  frequency_penalty: 0,
  ...extra,
});

const question: ChatMessage[] = [{ role: 'user', content: 'What is in the fake answer?' }];
const promptTokens = fakeTokens('What is in the fake answer?').length;

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

function lastBody(fake: FakeOpenAIServer = server): Record<string, unknown> {
  return fake.requests.at(-1)?.body ?? {};
}

beforeAll(() => {
  server = startFakeOpenAI();
  keyed = startFakeOpenAI({ apiKey: API_KEY });
});

beforeEach(() => {
  server.behave({});
  server.requests.length = 0;
});

afterAll(async () => {
  await server.close();
  await keyed.close();
});

describe('openai chat', () => {
  test('answers with the summary shape and the server usage', async () => {
    const summary = await provider().chat(question, options());
    expect(summary.message).toEqual({ role: 'assistant', content: FAKE_ANSWER, tokens: fakeTokens(FAKE_ANSWER).length });
    expect(summary.id).toMatch(/^chatcmpl-fake-/);
    expect(summary.model).toBe('fake-model');
    expect(summary.finish_reason).toBe('stop');
    expect(summary.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: fakeTokens(FAKE_ANSWER).length,
      total_tokens: promptTokens + fakeTokens(FAKE_ANSWER).length,
    });
    expect(summary.provider_info.provider).toBe('openai');
    expect(summary.provider_info.response_time_ms).toBeGreaterThanOrEqual(0);
    expect(summary.provider_info.usage_estimated).toBeUndefined();
  });

  test('sends the options, and the system prompt first', async () => {
    await provider({ system_prompt: 'You are terse.' }).chat(
      [
        { role: 'system', content: 'Context: none' },
        { role: 'user', content: 'Hi' },
      ],
      options({
        max_tokens: 7,
        temperature: 0.2,
        presence_penalty: 0.5,
        frequency_penalty: -0.5,
        top_p: 0.9,
        seed: 3,
        response_format: { type: 'json_object' },
      }),
    );
    expect(lastBody()).toMatchObject({
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'system', content: 'Context: none' },
        { role: 'user', content: 'Hi' },
      ],
      max_tokens: 7,
      temperature: 0.2,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      top_p: 0.9,
      seed: 3,
      response_format: { type: 'json_object' },
    });
    expect(lastBody().stop).toBeUndefined();
  });

  test('the default stop sequence (a newline) ends the answer at its first line', async () => {
    const summary = await provider().chat(question, options({ stop_sequences: ['\n'] }));
    expect(summary.message.content).toBe(FAKE_ANSWER.split('\n')[0] as string);
    expect(summary.finish_reason).toBe('stop');
    expect(lastBody().stop).toEqual(['\n']);
  });

  test('max_tokens cuts the answer with finish_reason length', async () => {
    const summary = await provider().chat(question, options({ max_tokens: 3 }));
    expect(summary.message.tokens).toBe(3);
    expect(summary.finish_reason).toBe('length');
  });

  test('a server without usage gets characters / 4, labelled as an estimate', async () => {
    server.behave({ omitUsage: true });
    const summary = await provider().chat(question, options());
    expect(summary.provider_info.usage_estimated).toBe(true);
    expect(summary.usage.prompt_tokens).toBe(Math.ceil('What is in the fake answer?'.length / 4));
    expect(summary.usage.completion_tokens).toBe(Math.ceil(FAKE_ANSWER.length / 4));
    expect(summary.message.tokens).toBe(summary.usage.completion_tokens);
  });

  test('switches to max_completion_tokens when the server refuses max_tokens', async () => {
    server.behave({ requireMaxCompletionTokens: true });
    const chosen = provider();
    const summary = await chosen.chat(question, options({ max_tokens: 4 }));
    expect(summary.message.tokens).toBe(4);
    expect(lastBody()).toMatchObject({ max_completion_tokens: 4 });
    expect(lastBody().max_tokens).toBeUndefined();
    await chosen.chat(question, options({ max_tokens: 5 }));
    // Learnt once: the next call goes straight to the accepted parameter.
    expect(server.requests.filter((request) => request.body?.max_tokens !== undefined)).toHaveLength(1);
  });
});

describe('openai streaming', () => {
  test('streams deltas that add up to the answer, then one done event with usage', async () => {
    const { text, deltas, done } = await collect(provider().stream(question, options()));
    expect(text).toBe(FAKE_ANSWER);
    expect(deltas).toBe(fakeTokens(FAKE_ANSWER).length);
    expect(done).toEqual({
      type: 'done',
      id: expect.stringMatching(/^chatcmpl-fake-/),
      model: 'fake-model',
      finish_reason: 'stop',
      usage: { prompt_tokens: promptTokens, completion_tokens: deltas, total_tokens: promptTokens + deltas },
      provider_info: expect.objectContaining({ provider: 'openai' }),
    });
    expect(lastBody()).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  test('stop sequences end a streamed answer', async () => {
    const { text, done } = await collect(provider().stream(question, options({ stop_sequences: ['same way'] })));
    // The fake's tokens carry their leading whitespace, so the answer ends at the last whole word.
    expect(text).toBe('The fake model answers the');
    expect(done).toMatchObject({ finish_reason: 'stop' });
  });

  test('a stream without usage is estimated and says so', async () => {
    server.behave({ omitUsage: true });
    const { done } = await collect(provider().stream(question, options()));
    expect(done).toMatchObject({
      usage: { completion_tokens: Math.ceil(FAKE_ANSWER.length / 4) },
      provider_info: { usage_estimated: true },
    });
  });
});

describe('openai failures', () => {
  test('a refused key is a 502 ModelError naming the model and never the key', async () => {
    const error = await failure(
      new OpenAIChatProvider(
        withModelDefaults('openai', { model: 'gpt-x', base_url: keyed.url, api_key: 'sk-wrong-key-98765432zyxw' }),
      ).chat(question, options()),
    );
    expect(error).toBeInstanceOf(ModelError);
    const message = (error as ModelError).message;
    expect((error as ModelError).kind).toBe('upstream');
    expect(message).toStartWith(`Model 'gpt-x' at ${keyed.url} failed: 401 Incorrect API key provided`);
    expect(message).not.toContain('sk-wrong-key-98765432zyxw');
    expect(message).not.toContain('sk-wr');
    expect(message).not.toContain('zyxw');
  });

  test('the right key is sent as a bearer token', async () => {
    const summary = await new OpenAIChatProvider(
      withModelDefaults('openai', { model: 'fake-model', base_url: keyed.url, api_key: API_KEY }),
    ).chat(question, options());
    expect(summary.message.content).toBe(FAKE_ANSWER);
    expect(keyed.requests.at(-1)?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  test('without a key no Authorization header is sent, even when the process has OPENAI_API_KEY', async () => {
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'sk-operator-own-key';
    try {
      await provider().chat(question, options());
      expect(server.requests.at(-1)?.headers.authorization).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });

  test('credentials inside base_url do not appear in messages', async () => {
    const url = server.url.replace('http://', 'http://user:hunter2@');
    server.behave({ failure: { status: 500, message: 'The server had an error' } });
    const error = await failure(provider({ base_url: url }).chat(question, options()));
    expect((error as ModelError).message).not.toContain('hunter2');
  });

  test('a server error is a ModelError with its message', async () => {
    server.behave({ failure: { status: 500, message: 'The server had an error while processing your request.' } });
    const error = await failure(provider().chat(question, options()));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toBe(
      `Model 'fake-model' at ${server.url} failed: 500 The server had an error while processing your request.`,
    );
  });

  test('a server error while streaming is thrown from the stream', async () => {
    server.behave({ failure: { status: 500, message: 'boom' } });
    const error = await failure(collect(provider().stream(question, options())));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toContain('500 boom');
  });

  test('a dead server fails within the configured timeout', async () => {
    const started = performance.now();
    const error = await failure(provider({ base_url: await deadServerUrl(), timeout_ms: 1000 }).chat(question, options()));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).kind).toBe('upstream');
    expect((error as ModelError).message).toContain('could not connect');
    expect(performance.now() - started).toBeLessThan(1000 + 2000);
  });

  test('a slow server gives a ModelTimeoutError within the configured timeout', async () => {
    server.behave({ delayMs: 10_000 });
    const started = performance.now();
    const error = await failure(provider({ timeout_ms: 300 }).chat(question, options()));
    expect(error).toBeInstanceOf(ModelTimeoutError);
    expect((error as ModelTimeoutError).kind).toBe('timeout');
    expect((error as ModelTimeoutError).message).toBe(`Model 'fake-model' at ${server.url} did not answer within 300 ms`);
    expect(performance.now() - started).toBeLessThan(300 + 2000);
  });

  test('a slow server times out a stream too, before and between chunks', async () => {
    server.behave({ delayMs: 10_000 });
    let started = performance.now();
    expect(await failure(collect(provider({ timeout_ms: 300 }).stream(question, options())))).toBeInstanceOf(ModelTimeoutError);
    expect(performance.now() - started).toBeLessThan(300 + 2000);

    server.behave({ chunkDelayMs: 10_000 });
    started = performance.now();
    expect(await failure(collect(provider({ timeout_ms: 300 }).stream(question, options())))).toBeInstanceOf(ModelTimeoutError);
    expect(performance.now() - started).toBeLessThan(300 + 2000);
  });

  test('a stream that keeps flowing is not cut by the timeout', async () => {
    server.behave({ chunkDelayMs: 60 });
    const { text } = await collect(provider({ timeout_ms: 300 }).stream(question, options()));
    expect(text).toBe(FAKE_ANSWER);
  });
});

describe('openai aborts', () => {
  test('aborting a request rejects with the abort reason, not a ModelError', async () => {
    server.behave({ delayMs: 10_000 });
    const controller = new AbortController();
    const pending = provider().chat(question, options(), controller.signal);
    setTimeout(() => controller.abort(), 50);
    const error = await failure(pending);
    expect(error).not.toBeInstanceOf(ModelError);
    expect((error as DOMException).name).toBe('AbortError');
  });

  test('an already aborted signal sends nothing', async () => {
    const error = await failure(provider().chat(question, options(), AbortSignal.abort()));
    expect((error as DOMException).name).toBe('AbortError');
    expect(server.requests).toHaveLength(0);
  });

  test('aborting a stream stops it', async () => {
    server.behave({ chunkDelayMs: 100 });
    const controller = new AbortController();
    let deltas = 0;
    const error = await failure(
      (async () => {
        for await (const event of provider().stream(question, options(), controller.signal)) {
          if (event.type === 'delta' && ++deltas === 1) controller.abort();
        }
      })(),
    );
    expect((error as DOMException).name).toBe('AbortError');
    expect(deltas).toBe(1);
  });

  test('leaving a stream early closes the response', async () => {
    server.behave({ chunkDelayMs: 100 });
    for await (const event of provider().stream(question, options())) {
      if (event.type === 'delta') break;
    }
    for (let i = 0; i < 100 && server.openResponses > 0; i++) await Bun.sleep(20);
    expect(server.openResponses).toBe(0);
  });
});

describe('openai health', () => {
  test('healthy when the server lists the model', async () => {
    expect(await provider().health()).toEqual({ healthy: true, message: `Model 'fake-model' is available at ${server.url}` });
  });

  test('reachable but not listing the model is healthy, and says so', async () => {
    const health = await provider({ model: 'other-model' }).health();
    expect(health.healthy).toBe(true);
    expect(health.message).toContain("does not list model 'other-model'");
  });

  test('a dead server or a refused key is unhealthy', async () => {
    const dead = await provider({ base_url: await deadServerUrl(), timeout_ms: 1000 }).health();
    expect(dead.healthy).toBe(false);
    expect(dead.message).toContain('could not connect');
    const refused = await new OpenAIChatProvider(
      withModelDefaults('openai', { model: 'm', base_url: keyed.url, api_key: 'sk-nope-12345678' }),
    ).health();
    expect(refused.healthy).toBe(false);
    expect(refused.message).toContain('401');
    expect(refused.message).not.toContain('sk-nope-12345678');
  });
});

describe('openai configuration', () => {
  test('defaults: OpenAI base URL and 60 s timeout', () => {
    expect(withModelDefaults('openai', { model: 'gpt-4o-mini' })).toEqual({
      model: 'gpt-4o-mini',
      base_url: 'https://api.openai.com/v1',
      timeout_ms: 60_000,
      cost_per_1k_prompt_tokens: 0,
      cost_per_1k_completion_tokens: 0,
    });
  });

  test('a valid configuration has no issues and may carry unknown keys', () => {
    expect(
      validateModelConfiguration('openai', {
        model: 'llama3.2',
        base_url: 'http://localhost:11434/v1',
        api_key: 'ollama',
        system_prompt: 'Be brief.',
        timeout_ms: 30_000,
        cost_per_1k_prompt_tokens: 0.0005,
        cost_per_1k_completion_tokens: 0,
        anything_else: true,
      }),
    ).toEqual([]);
  });

  test('model is a required non-empty string', () => {
    expect(validateModelConfiguration('openai', {})).toEqual([{ field: 'model', msg: 'Field required', type: 'missing' }]);
    expect(validateModelConfiguration('openai', { model: '  ' })[0]?.type).toBe('string_too_short');
    expect(validateModelConfiguration('openai', { model: 5 })[0]?.type).toBe('string_type');
  });

  test('base_url must be http(s), timeout_ms a positive integer, prices non-negative numbers', () => {
    const issues = validateModelConfiguration('openai', {
      model: 'm',
      base_url: 'ftp://example.com',
      api_key: 12,
      timeout_ms: 0,
      system_prompt: ['x'],
      cost_per_1k_prompt_tokens: -1,
      cost_per_1k_completion_tokens: Number.NaN,
    });
    expect(issues.map((issue) => [issue.field, issue.type])).toEqual([
      ['base_url', 'url_parsing'],
      ['api_key', 'string_type'],
      ['timeout_ms', 'greater_than_equal'],
      ['system_prompt', 'string_type'],
      ['cost_per_1k_prompt_tokens', 'greater_than_equal'],
      ['cost_per_1k_completion_tokens', 'float_type'],
    ]);
    expect(validateModelConfiguration('openai', { model: 'm', base_url: 'not a url' })[0]?.type).toBe('url_parsing');
    expect(validateModelConfiguration('openai', { model: 'm', timeout_ms: 2.5 })[0]?.type).toBe('int_type');
  });

  test('a configuration that is not an object, or an unknown dtype, is one issue', () => {
    expect(validateModelConfiguration('openai', 'nope')).toEqual([
      { field: '', msg: 'Input should be a valid dictionary', type: 'dict_type' },
    ]);
    expect(validateModelConfiguration('gguf' as 'openai', {})[0]?.type).toBe('enum');
  });

  test('createProvider gives a working openai provider', async () => {
    const localModels = new LocalModelRegistry();
    const made = createProvider(modelSettings('openai', { model: 'fake-model', base_url: server.url }), { localModels });
    expect((await made.chat(question, options())).message.content).toBe(FAKE_ANSWER);
    await localModels.dispose();
  });
});

describe('fake server embeddings (for other engines)', () => {
  test('answers deterministic vectors, as floats or base64', async () => {
    const client = new OpenAI({ apiKey: 'unused', baseURL: server.url, maxRetries: 0 });
    // The client asks for base64 and decodes it.
    const first = await client.embeddings.create({ model: 'fake-embedding', input: ['alpha', 'beta'] });
    expect(first.data).toHaveLength(2);
    expect(first.data[0]?.embedding).toHaveLength(16);
    const expected = fakeEmbedding('alpha', 16);
    for (const [i, value] of (first.data[0]?.embedding ?? []).entries()) expect(value).toBeCloseTo(expected[i] as number, 5);
    const floats = await client.embeddings.create({ model: 'fake-embedding', input: 'alpha', encoding_format: 'float', dimensions: 4 });
    expect(floats.data[0]?.embedding).toEqual(fakeEmbedding('alpha', 4));
  });
});
