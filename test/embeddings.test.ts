import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { env as transformersEnv } from '@huggingface/transformers';
import { makeOnnxEmbedder } from '../scripts/fixtures/make-onnx-embedder.ts';
import { closeEmbedders, createEmbedder, type Embedder, EmbedderSpecError, parseEmbedderSpec } from '../src/embeddings/embedder.ts';
import { deadServerUrl, fakeEmbedding, startFakeOpenAI } from './fakes/openai-server.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'knode-embeddings-'));
const offline = { dataDir, allowDownload: false };

afterAll(async () => {
  await closeEmbedders();
  rmSync(dataDir, { recursive: true, force: true });
});

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0);
  return sum;
}

function expectUnitLength(vectors: readonly Float32Array[], dimension: number): void {
  for (const vector of vectors) {
    expect(vector).toBeInstanceOf(Float32Array);
    expect(vector.length).toBe(dimension);
    expect(Math.sqrt(dot(vector, vector))).toBeCloseTo(1, 4);
  }
}

function expectSameVector(a: Float32Array | undefined, b: Float32Array | undefined): void {
  expect(a).toBeDefined();
  expect(b).toBeDefined();
  expect(dot(a!, b!)).toBeCloseTo(1, 4);
}

describe('embedder specs', () => {
  test('parses the four kinds of spec', () => {
    expect(parseEmbedderSpec('use-lite')).toEqual({ kind: 'use-lite', quantized: false });
    expect(parseEmbedderSpec('use-lite-int8')).toEqual({ kind: 'use-lite', quantized: true });
    expect(parseEmbedderSpec('transformers:Xenova/all-MiniLM-L6-v2')).toEqual({
      kind: 'transformers',
      model: 'Xenova/all-MiniLM-L6-v2',
    });
    expect(parseEmbedderSpec('transformers:/srv/models/minilm')).toEqual({
      kind: 'transformers',
      model: '/srv/models/minilm',
    });
    expect(parseEmbedderSpec('openai:nomic-embed-text')).toEqual({ kind: 'openai', model: 'nomic-embed-text' });
  });

  test('refuses specs that name no embedder, with a message fit for a 422', () => {
    for (const spec of ['', 'use-lite2', 'use-lite-int4', 'transformers:', 'openai:  ', 'ollama:nomic', ':model', 'USE-LITE']) {
      expect(() => parseEmbedderSpec(spec)).toThrow(EmbedderSpecError);
    }
    expect(() => parseEmbedderSpec('bogus')).toThrow(/use-lite, use-lite-int8, transformers:<model or folder> or openai:<model>/);
  });

  test('use-lite-int8 is its own embedder: same dimension, vectors within cosine 0.99 of use-lite', async () => {
    const [float, int8] = await Promise.all([createEmbedder('use-lite', offline), createEmbedder('use-lite-int8', offline)]);
    expect(int8).not.toBe(float);
    expect(int8.id).toBe('use-lite-int8');
    expect(int8.dimension).toBe(float.dimension);
    const text = 'The river carries silt down to the delta every spring.';
    const [a] = await float.embed([text]);
    const [b] = await int8.embed([text]);
    expect(dot(a!, b!)).toBeGreaterThan(0.99);
  });

  test('createEmbedder rejects an unknown spec before loading anything', async () => {
    await expect(createEmbedder('bogus', offline)).rejects.toThrow(EmbedderSpecError);
  });
});

describe('use-lite (Universal Sentence Encoder lite)', () => {
  let embedder: Embedder;
  beforeAll(async () => {
    embedder = await createEmbedder('use-lite', offline);
  });

  test('is shared per spec and gives 512-dimension unit vectors', async () => {
    const [first, second] = await Promise.all([createEmbedder('use-lite', offline), createEmbedder('use-lite', offline)]);
    expect(first).toBe(second);
    expect(embedder.id).toBe('use-lite');
    expect(embedder.dimension).toBe(512);
    const vectors = await embedder.embed(['The cat sat on the mat.', 'Stock markets fell sharply today.']);
    expectUnitLength(vectors, 512);
  });

  test('a paraphrase query finds its document above 0.5; an unrelated document scores lower', async () => {
    const documents = [
      'Steps to reset a forgotten password for your account.',
      'Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar.',
      'The recipe needs two eggs, flour and a cup of milk.',
    ];
    const [query] = await embedder.embed(['How can I recover my account password?']);
    const vectors = await embedder.embed(documents);
    const scores = vectors.map((vector) => dot(query!, vector));
    expect(scores[0]).toBeGreaterThan(0.5); // 0.71 when written
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    expect(scores[0]).toBeGreaterThan(scores[2]!);
    expect(Math.max(scores[1]!, scores[2]!)).toBeLessThan(0.5);
  });

  test('batching keeps the order and gives each text the vector it gets alone', async () => {
    const texts = Array.from({ length: 45 }, (_, i) => `Sentence number ${i} talks about ${i % 2 ? 'rivers' : 'mountains'}.`);
    texts[7] = 'A much longer text. '.repeat(300); // forces a batch boundary by characters
    const together = await embedder.embed(texts);
    expect(together.length).toBe(texts.length);
    for (const index of [0, 7, 8, 44]) {
      const [alone] = await embedder.embed([texts[index]!]);
      expectSameVector(together[index], alone);
    }
  });

  test('an empty list embeds to an empty list, and an aborted call is refused', async () => {
    expect(await embedder.embed([])).toEqual([]);
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(embedder.embed(['anything'], controller.signal)).rejects.toThrow('stop');
  });

  test('closing waits for work in flight, and a closed embedder starts again when used', async () => {
    const pending = embedder.embed(['still answered after close']);
    await embedder.close?.();
    expect((await pending).length).toBe(1);
    const [again] = await embedder.embed(['works after close']);
    expectUnitLength([again!], 512);
  });

  test('tfjs on two worker threads gives the vectors, in the same order, of the default engine (ONNX Runtime)', async () => {
    const { UseLiteEmbedder } = await import('../src/embeddings/use-lite.ts');
    const pool = new UseLiteEmbedder({ engine: 'tfjs', threads: 2 });
    try {
      const texts = Array.from({ length: 12 }, (_, i) => `${'Paragraph about topic number '.repeat(20)}${i}.`);
      const [parallel, single] = await Promise.all([pool.embed(texts), embedder.embed(texts)]);
      expect(parallel.length).toBe(texts.length);
      for (const index of texts.keys()) expectSameVector(parallel[index], single[index]);
    } finally {
      await pool.close();
    }
  });

  test('concurrent calls are all answered, each with its own vectors', async () => {
    const [a, b, c] = await Promise.all([
      embedder.embed(['first caller']),
      embedder.embed(['second caller', 'second caller again']),
      embedder.embed(['first caller']),
    ]);
    expect(b!.length).toBe(2);
    expectSameVector(a![0], c![0]);
  });
});

describe('transformers (ONNX through @huggingface/transformers)', () => {
  const fixtureDir = join(dataDir, 'fixture-model');
  let dimension = 0;
  const originalFetch = transformersEnv.fetch;

  beforeAll(async () => {
    const fixture = await makeOnnxEmbedder(fixtureDir, { dimension: 32 });
    dimension = fixture.dimension;
    // Any attempt to reach the hub fails the test instead of going out.
    transformersEnv.fetch = async (input: string | URL) => {
      throw new Error(`network access attempted: ${String(input)}`);
    };
  });
  afterAll(() => {
    transformersEnv.fetch = originalFetch;
  });

  test('loads a model folder offline and gives unit vectors of its dimension', async () => {
    const embedder = await createEmbedder(`transformers:${fixtureDir}`, offline);
    expect(embedder.id).toBe(`transformers:${fixtureDir}`);
    expect(embedder.dimension).toBe(dimension);
    const vectors = await embedder.embed(['The cat sat on the mat.', 'Stock markets fell sharply today.']);
    expectUnitLength(vectors, dimension);
  });

  test('keeps the input order although it batches by length, and is deterministic', async () => {
    const embedder = await createEmbedder(`transformers:${fixtureDir}`, offline);
    const texts = Array.from({ length: 70 }, (_, i) => `${'word '.repeat(70 - i)}river ${i}`);
    texts[3] = 'cat';
    const together = await embedder.embed(texts);
    expect(together.length).toBe(70);
    for (const index of [0, 3, 35, 69]) {
      const [alone] = await embedder.embed([texts[index]!]);
      expectSameVector(together[index], alone);
    }
    const [x] = await embedder.embed(['the cat sat on the mat']);
    const [y] = await embedder.embed(['a cat sat on a mat']);
    const [z] = await embedder.embed(['stock prices fell in the bank']);
    expect(dot(x!, y!)).toBeGreaterThan(dot(x!, z!)); // shared words bring texts together
  });

  test('closing frees the model; the next call loads it again', async () => {
    const embedder = await createEmbedder(`transformers:${fixtureDir}`, offline);
    const [before] = await embedder.embed(['reload me']);
    const pending = embedder.embed(['in flight']);
    await embedder.close?.();
    expect((await pending).length).toBe(1);
    const [after] = await embedder.embed(['reload me']);
    expectSameVector(before, after);
  });

  test('finds a hub-style model id under <dataDir>/models/ without downloading', async () => {
    cpSync(fixtureDir, join(dataDir, 'models', 'acme', 'tiny-embedder'), { recursive: true });
    const embedder = await createEmbedder('transformers:acme/tiny-embedder', offline);
    expect(embedder.dimension).toBe(dimension);
    const [vector] = await embedder.embed(['hello world']);
    expectUnitLength([vector!], dimension);
  });

  test('a missing model with downloads off fails fast with a hint, and is not cached', async () => {
    const attempt = createEmbedder('transformers:acme/not-there', offline);
    await expect(attempt).rejects.toThrow(/not found .*SVC_ALLOW_MODEL_DOWNLOAD/);
    await attempt.catch(() => undefined);
    cpSync(fixtureDir, join(dataDir, 'models', 'acme', 'not-there'), { recursive: true });
    const embedder = await createEmbedder('transformers:acme/not-there', offline);
    expect(embedder.dimension).toBe(dimension);
  });

  test('a folder that is not a model is refused with the model named', async () => {
    const empty = mkdtempSync(join(dataDir, 'not-a-model-'));
    await expect(createEmbedder(`transformers:${empty}`, offline)).rejects.toThrow(/could not be loaded/);
  });
});

describe('openai (OpenAI-compatible /v1/embeddings)', () => {
  const apiKey = 'sk-test-0123456789abcdef';
  const fake = startFakeOpenAI({ embeddingDimensions: 24, apiKey });
  afterAll(() => fake.close());

  test('learns the dimension, batches requests and returns the server vectors normalised', async () => {
    const embedder = await createEmbedder('openai:fake-embed', {
      ...offline,
      openai: { base_url: fake.url, api_key: apiKey },
    });
    expect(embedder.id).toBe('openai:fake-embed');
    expect(embedder.dimension).toBe(24);
    const before = fake.requests.length;
    const texts = Array.from({ length: 150 }, (_, i) => `text ${i}`);
    const vectors = await embedder.embed(texts);
    expect(vectors.length).toBe(150);
    expectUnitLength(vectors, 24);
    expectSameVector(vectors[149], Float32Array.from(fakeEmbedding('text 149', 24)));
    const calls = fake.requests.slice(before);
    expect(calls.map((call) => (call.body?.input as unknown[] | undefined)?.length)).toEqual([64, 64, 22]);
    for (const call of calls) {
      expect(call.path).toBe('/v1/embeddings');
      expect(call.body?.encoding_format).toBe('float');
      expect(call.body?.model).toBe('fake-embed');
      expect(call.headers.authorization).toBe(`Bearer ${apiKey}`);
    }
  });

  test('a refused key is reported with the server named and no trace of the key', async () => {
    const wrongKey = 'sk-wrong-9876543210fedcba';
    const attempt = createEmbedder('openai:fake-embed', { ...offline, openai: { base_url: fake.url, api_key: wrongKey } });
    const error = (await attempt.catch((caught: unknown) => caught)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toContain(fake.url);
    expect(error.message).toContain('401');
    expect(error.message).not.toContain(wrongKey);
    expect(error.message).not.toContain(wrongKey.slice(-4));
  });

  test('a server error during embedding names the server', async () => {
    const embedder = await createEmbedder('openai:fake-embed', {
      ...offline,
      openai: { base_url: fake.url, api_key: apiKey },
    });
    fake.behave({ failure: { status: 400, message: 'input too long' } });
    try {
      await expect(embedder.embed(['x'])).rejects.toThrow(`embedding server ${fake.url} failed for model fake-embed (HTTP 400)`);
    } finally {
      await Bun.sleep(50);
      fake.behave({});
    }
  });

  test('an unreachable server is reported by address', async () => {
    const url = await deadServerUrl();
    await expect(createEmbedder('openai:fake-embed', { ...offline, openai: { base_url: url } })).rejects.toThrow(url);
  });

  test('a base_url that is not http(s) is refused', async () => {
    await expect(createEmbedder('openai:m', { ...offline, openai: { base_url: 'file:///etc/passwd' } })).rejects.toThrow(/http or https/);
  });
});
