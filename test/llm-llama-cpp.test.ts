/**
 * The llama_cpp provider on the real node-llama-cpp path, with the tiny random-weight GGUF written by
 * scripts/fixtures/make-tiny-gguf.ts. Its vocabulary has one token per printable character and it
 * never ends an answer by itself, so counts are predictable: an answer of n tokens has n characters.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTinyGguf } from '../scripts/fixtures/make-tiny-gguf.ts';
import { LlamaCppChatProvider } from '../src/llm/llama-cpp/chat-provider.ts';
import { LocalModelRegistry } from '../src/llm/llama-cpp/model-registry.ts';
import { modelSettings, withModelDefaults } from '../src/llm/model-config.ts';
import { type ChatMessage, type ChatOptions, type ChatSummary, ModelError } from '../src/llm/provider.ts';
import { createProvider } from '../src/llm/registry.ts';
import { coreCount } from '../src/util/cores.ts';
import { validateModelConfiguration } from './helpers/model-configuration.ts';
import { collect } from './helpers/streams.ts';

let dir: string;
let modelPath: string;
let registry: LocalModelRegistry;

// One thread: on the tiny model, thread synchronisation costs more than the arithmetic it shares.
const provider = (extra: Record<string, unknown> = {}, reg = registry) =>
  new LlamaCppChatProvider(withModelDefaults('llama_cpp', { model_path: modelPath, threads: 1, ...extra }), reg);

const options = (extra: Partial<ChatOptions> = {}): ChatOptions => ({
  max_tokens: 24,
  temperature: 0,
  stop_sequences: [],
  presence_penalty: 0,
  frequency_penalty: 0,
  ...extra,
});

const hello: ChatMessage[] = [{ role: 'user', content: 'Hello' }];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'knode-llama-'));
  modelPath = writeTinyGguf(join(dir, 'tiny.gguf'));
  registry = new LocalModelRegistry();
});

afterAll(async () => {
  await registry.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('tiny GGUF fixture', () => {
  test('is the same file every time and a few hundred KB', () => {
    const again = writeTinyGguf(join(dir, 'again.gguf'));
    const first = Bun.file(modelPath);
    expect(first.size).toBeGreaterThan(100_000);
    expect(first.size).toBeLessThan(1_000_000);
    expect(Bun.hash(readFileSync(again))).toBe(Bun.hash(readFileSync(modelPath)));
  });
});

describe('llama_cpp generation', () => {
  let greedy: ChatSummary;

  beforeAll(async () => {
    greedy = await provider().chat(hello, options());
  });

  test('answers with the summary shape and usage counted by the tokenizer', () => {
    expect(greedy.id).toMatch(/^chatcmpl-/);
    expect(greedy.model).toBe('tiny.gguf');
    expect(greedy.message.role).toBe('assistant');
    expect(greedy.message.content.length).toBe(24);
    expect(greedy.finish_reason).toBe('length');
    expect(greedy.message.tokens).toBe(24);
    expect(greedy.usage.completion_tokens).toBe(24);
    expect(greedy.usage.prompt_tokens).toBeGreaterThan(5);
    expect(greedy.usage.total_tokens).toBe(greedy.usage.prompt_tokens + 24);
    expect(greedy.provider_info.provider).toBe('llama_cpp');
    expect(greedy.provider_info.response_time_ms).toBeGreaterThanOrEqual(0);
    expect(greedy.provider_info.chat_template).toBe('ChatML');
    expect(greedy.provider_info.threads).toBe(1);
  });

  test('counts prompt tokens of the rendered template', async () => {
    // "Hello" -> "Hello world" adds "▁world": six one-character tokens of the fixture's vocabulary.
    const longer = await provider().chat([{ role: 'user', content: 'Hello world' }], options({ max_tokens: 1 }));
    expect(longer.usage.prompt_tokens).toBe(greedy.usage.prompt_tokens + 6);
  });

  test('prepends the configured system prompt', async () => {
    const withSystem = await provider({ system_prompt: 'Be brief.' }).chat(hello, options({ max_tokens: 1 }));
    expect(withSystem.usage.prompt_tokens).toBeGreaterThan(greedy.usage.prompt_tokens + 9);
  });

  test('greedy answers are deterministic', async () => {
    const again = await provider().chat(hello, options());
    expect(again.message.content).toBe(greedy.message.content);
  });

  test('a stop sequence ends the answer before it', async () => {
    const answer = greedy.message.content;
    const stop = answer[12] as string;
    const expected = answer.slice(0, answer.indexOf(stop));
    const stopped = await provider().chat(hello, options({ stop_sequences: [stop] }));
    expect(stopped.message.content).toBe(expected);
    expect(stopped.finish_reason).toBe('stop');
    expect(stopped.usage.completion_tokens).toBe(expected.length);
  });

  test('a stop sequence of several characters works too, and empty ones are ignored', async () => {
    const answer = greedy.message.content;
    const stop = answer.slice(8, 11);
    const expected = answer.slice(0, answer.indexOf(stop));
    const stopped = await provider().chat(hello, options({ stop_sequences: ['', stop, '\n'] }));
    expect(stopped.message.content).toBe(expected);
    expect(stopped.finish_reason).toBe('stop');
  });

  test('streams the same answer, then one done event with usage', async () => {
    const { text, deltas, done } = await collect(provider().stream(hello, options()));
    expect(text).toBe(greedy.message.content);
    expect(deltas).toBeGreaterThan(1);
    expect(done).toMatchObject({ type: 'done', finish_reason: 'length', model: 'tiny.gguf', usage: greedy.usage });
  });

  test('streaming honours stop sequences', async () => {
    const answer = greedy.message.content;
    const stop = answer[12] as string;
    const { text, done } = await collect(provider().stream(hello, options({ stop_sequences: [stop] })));
    expect(text).toBe(answer.slice(0, answer.indexOf(stop)));
    expect(done).toMatchObject({ finish_reason: 'stop' });
  });

  test('penalties change what is generated', async () => {
    const penalised = await provider().chat(hello, options({ presence_penalty: 2, frequency_penalty: 2 }));
    expect(penalised.message.content).not.toBe(greedy.message.content);
    expect(penalised.usage.completion_tokens).toBe(24);
  });

  test('a seed makes sampling reproducible', async () => {
    const first = await provider().chat(hello, options({ temperature: 0.9, seed: 7, top_p: 0.9 }));
    const second = await provider().chat(hello, options({ temperature: 0.9, seed: 7, top_p: 0.9 }));
    expect(second.message.content).toBe(first.message.content);
  });

  test('response_format json_object constrains the answer to JSON', async () => {
    const answer = await provider().chat(hello, options({ max_tokens: 200, response_format: { type: 'json_object' } }));
    expect(answer.finish_reason).toBe('stop');
    expect(() => JSON.parse(answer.message.content)).not.toThrow();
  });
});

describe('llama_cpp aborts and concurrency', () => {
  test('aborting stops a generation and frees the model for the next request', async () => {
    const controller = new AbortController();
    const events = provider().stream(hello, options({ max_tokens: 1500 }), controller.signal);
    let deltas = 0;
    const consumed = (async () => {
      for await (const event of events) {
        if (event.type === 'delta' && ++deltas === 3) controller.abort();
      }
    })();
    const error = await consumed.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    expect(deltas).toBeLessThan(1500);
    const next = await provider().chat(hello, options({ max_tokens: 4 }));
    expect(next.usage.completion_tokens).toBe(4);
  });

  test('aborting chat() rejects with the abort reason', async () => {
    const controller = new AbortController();
    const pending = provider().chat(hello, options({ max_tokens: 1500 }), controller.signal);
    setTimeout(() => controller.abort(), 20);
    const error = await pending.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect((error as DOMException).name).toBe('AbortError');
  });

  test('leaving a stream early stops generation', async () => {
    let deltas = 0;
    for await (const event of provider().stream(hello, options({ max_tokens: 1500 }))) {
      if (event.type === 'delta' && ++deltas === 2) break;
    }
    expect(registry.queued).toBe(0);
    const next = await provider().chat(hello, options({ max_tokens: 2 }));
    expect(next.usage.completion_tokens).toBe(2);
  });

  test('a request aborted while it waits for the model never runs', async () => {
    const long = provider().chat(hello, options({ max_tokens: 300 }));
    const controller = new AbortController();
    const waiting = provider().chat(hello, options(), controller.signal);
    controller.abort();
    const error = await waiting.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect((error as DOMException).name).toBe('AbortError');
    expect((await long).usage.completion_tokens).toBe(300);
  });

  test('ten concurrent requests to one model all complete', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        provider().chat([{ role: 'user', content: `Question number ${i}` }], options({ max_tokens: 16, temperature: 0.7, seed: i })),
      ),
    );
    for (const answer of answers) {
      expect(answer.usage.completion_tokens).toBe(16);
      expect(answer.finish_reason).toBe('length');
    }
    expect(registry.loadedModelPaths()).toHaveLength(1);
    expect(registry.queued).toBe(0);
  });
});

describe('llama_cpp model registry', () => {
  test('providers of the same file share one loaded model', async () => {
    const own = new LocalModelRegistry();
    try {
      await provider({}, own).chat(hello, options({ max_tokens: 1 }));
      await provider({ system_prompt: 'other record, same file' }, own).chat(hello, options({ max_tokens: 1 }));
      expect(own.loadedModelPaths()).toHaveLength(1);
    } finally {
      await own.dispose();
    }
  });

  test('unloads a model unused for idleUnloadMs and loads it again when needed', async () => {
    const own = new LocalModelRegistry({ idleUnloadMs: 50 });
    try {
      await provider({}, own).chat(hello, options({ max_tokens: 1 }));
      expect(own.isLoaded(modelPath)).toBe(true);
      for (let i = 0; i < 100 && own.isLoaded(modelPath); i++) await Bun.sleep(20);
      expect(own.isLoaded(modelPath)).toBe(false);
      const again = await provider({}, own).chat(hello, options({ max_tokens: 3 }));
      expect(again.usage.completion_tokens).toBe(3);
    } finally {
      await own.dispose();
    }
  });

  test('refuses work after dispose', async () => {
    const own = new LocalModelRegistry();
    await own.dispose();
    await expect(provider({}, own).chat(hello, options())).rejects.toBeInstanceOf(ModelError);
  });

  test('a file that is not a model fails with a ModelError naming the file, not its folder', async () => {
    const broken = join(dir, 'broken.gguf');
    writeFileSync(broken, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(64, 7)]));
    const error = await provider({ model_path: broken })
      .chat(hello, options())
      .then(
        () => null,
        (reason: unknown) => reason,
      );
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).kind).toBe('upstream');
    expect((error as ModelError).message).toContain("'broken.gguf'");
    expect((error as ModelError).message).not.toContain(dir);
    // The next request to a good model still works.
    expect((await provider().chat(hello, options({ max_tokens: 1 }))).usage.completion_tokens).toBe(1);
  });
});

describe('llama_cpp health', () => {
  test('a readable GGUF is healthy without being loaded', async () => {
    const own = new LocalModelRegistry();
    try {
      const health = await provider({}, own).health();
      expect(health).toEqual({ healthy: true, message: "Model 'tiny.gguf' is ready (llama); it loads on first use" });
      expect(own.loadedModelPaths()).toHaveLength(0);
      await provider({}, own).chat(hello, options({ max_tokens: 1 }));
      expect((await provider({}, own).health()).message).toContain('is loaded');
    } finally {
      await own.dispose();
    }
  });

  test('a missing file is unhealthy', async () => {
    const health = await provider({ model_path: join(dir, 'gone.gguf') }).health();
    expect(health.healthy).toBe(false);
    expect(health.message).toContain('does not exist');
  });
});

describe('llama_cpp configuration', () => {
  test('accepts a readable GGUF file and keeps unknown keys', () => {
    expect(
      validateModelConfiguration('llama_cpp', { model_path: modelPath, context_size: 2048, threads: 0, gpu_layers: 0, extra: 1 }),
    ).toEqual([]);
  });

  test('model_path is required and must be a readable .gguf file with the GGUF magic', () => {
    const notGguf = join(dir, 'notes.gguf');
    writeFileSync(notGguf, 'hello world');
    const wrongName = join(dir, 'model.bin');
    writeFileSync(wrongName, 'GGUF....');
    const check = (model_path: unknown) => validateModelConfiguration('llama_cpp', { model_path });
    expect(check(undefined)).toEqual([{ field: 'model_path', msg: 'Field required', type: 'missing' }]);
    expect(check(42)[0]?.type).toBe('string_type');
    expect(check(join(dir, 'missing.gguf'))[0]?.msg).toContain('does not exist');
    expect(check(notGguf)[0]?.msg).toContain('wrong magic');
    expect(check(wrongName)[0]?.msg).toContain('.gguf');
    expect(check(`${dir}/`)[0]?.type).toBe('value_error');
  });

  test.skipIf(process.getuid?.() === 0)('an unreadable file is refused', () => {
    const locked = join(dir, 'locked.gguf');
    writeFileSync(locked, 'GGUF');
    chmodSync(locked, 0o000);
    expect(validateModelConfiguration('llama_cpp', { model_path: locked })[0]?.msg).toContain('not readable');
  });

  test('context_size, threads and gpu_layers are non-negative integers; prices non-negative numbers', () => {
    const issues = validateModelConfiguration('llama_cpp', {
      model_path: modelPath,
      context_size: -1,
      threads: 1.5,
      gpu_layers: '3',
      system_prompt: 7,
      cost_per_1k_prompt_tokens: -0.1,
      cost_per_1k_completion_tokens: 'free',
    });
    expect(issues.map((issue) => [issue.field, issue.type])).toEqual([
      ['context_size', 'greater_than_equal'],
      ['threads', 'int_type'],
      ['gpu_layers', 'int_type'],
      ['system_prompt', 'string_type'],
      ['cost_per_1k_prompt_tokens', 'greater_than_equal'],
      ['cost_per_1k_completion_tokens', 'float_type'],
    ]);
  });

  test('createProvider gives a working llama_cpp provider', async () => {
    const made = createProvider(modelSettings('llama_cpp', { model_path: modelPath, threads: 1 }), { localModels: registry });
    expect((await made.chat(hello, options({ max_tokens: 2 }))).usage.completion_tokens).toBe(2);
  });

  test('threads default to the core count', () => {
    expect(withModelDefaults('llama_cpp', { model_path: modelPath }).threads).toBe(coreCount());
  });
});
