/**
 * USE-lite on ONNX Runtime: the TF.js graph converted to ONNX (src/embeddings/tfjs-graph-to-onnx.ts),
 * its tokenizer, and the proof that it gives tfjs' vectors (so a dataset's stored vectors stay valid):
 * cosine >= 0.999 on each of 100 real chunks (this machine's documentation, chunked as ingestion does;
 * `scripts/bench/use-lite-equivalence.ts` checks 1,000), whose tfjs vectors are kept between runs.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cosine, EDGE_TEXTS, realChunks, tfjsReference } from '../scripts/eval/use-lite-engines.ts';
import { encodeOnnxModel } from '../src/embeddings/onnx-writer.ts';
import { convertTfjsGraph, MAPPED_OPS, type TfjsModelJson, UnsupportedGraphError } from '../src/embeddings/tfjs-graph-to-onnx.ts';
import { setUseLiteWarningListener, UseLiteEmbedder } from '../src/embeddings/use-lite.ts';
import { convertedUseLiteModel, type UseLiteModelFiles, useLiteModelFiles } from '../src/embeddings/use-lite-model.ts';
import { USE_LITE_MAX_TOKENS, UseLiteTokenizer, type Vocabulary } from '../src/embeddings/use-lite-tokenizer.ts';

/** A sample in the tests (their time is what a developer waits); scripts/bench/use-lite-equivalence.ts checks 1,000. */
const CHUNKS = 100;
const MIN_COSINE = 0.999;
/** The int8 model (an option, not the default) moves vectors a little: 0.997 at worst (mean 0.9994) when measured. */
const MIN_COSINE_INT8 = 0.995;

const scratch = mkdtempSync(join(tmpdir(), 'knode-use-lite-onnx-'));
const files = useLiteModelFiles();
const modelJson = JSON.parse(readFileSync(files.model, 'utf8')) as TfjsModelJson;
const vocabulary = JSON.parse(readFileSync(files.vocabulary, 'utf8')) as Vocabulary;

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function weightBytes(): Uint8Array {
  const parts = modelJson.weightsManifest.flatMap((group) => group.paths).map((name) => readFileSync(files.shards[name] as string));
  return new Uint8Array(Buffer.concat(parts));
}

/** USE-lite's graph with its last op renamed to one no converter knows. */
function withUnknownOp(): TfjsModelJson {
  const clone = JSON.parse(JSON.stringify(modelJson));
  clone.modelTopology.node.at(-1).op = 'FancyNewOp';
  return clone;
}

/** @energetic-ai/embeddings' own tokenizer (what the tfjs engine uses), without loading a model. */
async function originalTokenizer(): Promise<{ encode(text: string): number[] }> {
  const { EmbeddingsModel } = await import('@energetic-ai/embeddings');
  const model = new EmbeddingsModel({ vocabulary: vocabulary as never, model: undefined as never });
  return (model as unknown as { tokenizer: { encode(text: string): number[] } }).tokenizer;
}

describe('converting the TF.js graph to ONNX', () => {
  test('maps every op the USE-lite graph uses', () => {
    const used = [...new Set(modelJson.modelTopology.node.map((node) => node.op))].sort();
    expect(used.filter((op) => !MAPPED_OPS.includes(op))).toEqual([]);
    expect(used.length).toBeGreaterThan(30);
  });

  test('is deterministic: the same files give the same bytes', () => {
    const weights = weightBytes();
    const first = encodeOnnxModel(convertTfjsGraph(modelJson, weights, { producerVersion: 'test' }));
    const second = encodeOnnxModel(convertTfjsGraph(modelJson, weights, { producerVersion: 'test' }));
    expect(Buffer.compare(Buffer.from(first), Buffer.from(second))).toBe(0);
    // The weights (27.9 MB) are stored once: a Conv2D's filter is kept only as the matrix it becomes.
    expect(first.byteLength).toBeGreaterThan(weights.byteLength);
    expect(first.byteLength).toBeLessThan(weights.byteLength * 1.01);
  });

  test('refuses an op it does not map, naming it', () => {
    const unknown = withUnknownOp();
    expect(() => convertTfjsGraph(unknown, weightBytes(), { producerVersion: 'test' })).toThrow(UnsupportedGraphError);
    expect(() => convertTfjsGraph(unknown, weightBytes(), { producerVersion: 'test' })).toThrow(/FancyNewOp/);
  });

  test('the converted model is cached under a key of the model and converter, and reused', () => {
    const saved = { HOME: process.env.HOME, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME };
    process.env.HOME = join(scratch, 'home');
    delete process.env.XDG_CACHE_HOME;
    try {
      const first = convertedUseLiteModel(files);
      if (!('path' in first)) throw new Error('expected a cached file');
      expect(first.path).toBe(join(scratch, 'home', '.cache', 'knode', 'models', first.key, 'use-lite.onnx'));
      const written = readFileSync(first.path);
      const again = convertedUseLiteModel(files);
      expect(again).toEqual(first);
      expect(Buffer.compare(readFileSync(first.path), written)).toBe(0);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  test('with no cache folder writable, the model is converted in memory', () => {
    const saved = { HOME: process.env.HOME, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, TMPDIR: process.env.TMPDIR };
    const notAFolder = join(scratch, 'not-a-folder');
    writeFileSync(notAFolder, 'a file where folders should be');
    process.env.HOME = notAFolder;
    process.env.TMPDIR = notAFolder;
    delete process.env.XDG_CACHE_HOME;
    try {
      const converted = convertedUseLiteModel(files);
      if (!('bytes' in converted)) throw new Error(`expected bytes, got ${JSON.stringify(converted)}`);
      expect(converted.bytes.byteLength).toBeGreaterThan(27_000_000);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});

describe('USE-lite on ONNX Runtime gives the vectors of tfjs', () => {
  let chunks: string[];
  let onnx: UseLiteEmbedder;
  beforeAll(() => {
    chunks = realChunks(CHUNKS);
    onnx = new UseLiteEmbedder({ engine: 'onnx', threads: 2, intraOpThreads: 1 });
  });
  afterAll(async () => {
    await onnx.close();
  });

  test('the tokenizer gives the ids of @energetic-ai/embeddings on every chunk and on awkward texts', async () => {
    const original = await originalTokenizer();
    const tokenizer = new UseLiteTokenizer(vocabulary);
    let longer = 0;
    for (const text of [...chunks, ...EDGE_TEXTS]) {
      const ids = tokenizer.encode(text);
      expect(ids).toEqual(original.encode(text));
      if (ids.length > USE_LITE_MAX_TOKENS) longer++;
    }
    // Worth knowing: USE-lite reads only the first 128 tokens of a text, and most 1,000-character chunks have more.
    expect(longer).toBeGreaterThan(0);
  });

  test(`cosine >= ${MIN_COSINE} on each of ${CHUNKS} real chunks, and on awkward texts`, async () => {
    const texts = [...chunks, ...EDGE_TEXTS];
    const reference = await tfjsReference(texts);
    const started = performance.now();
    const vectors = await onnx.embed(texts);
    const seconds = (performance.now() - started) / 1000;
    expect(vectors.length).toBe(texts.length);
    const cosines = vectors.map((vector, i) => cosine(vector, reference[i] as Float32Array));
    const worst = Math.min(...cosines);
    console.log(
      `use-lite onnx vs tfjs on ${texts.length} texts: min cosine ${worst.toFixed(9)} (1 - ${(1 - worst).toExponential(1)}), mean ${(cosines.reduce((a, b) => a + b, 0) / cosines.length).toFixed(9)}; onnx ${(texts.length / seconds).toFixed(0)} texts/s`,
    );
    cosines.forEach((value, i) => {
      if (!(value >= MIN_COSINE)) throw new Error(`text ${i} (${JSON.stringify(texts[i]?.slice(0, 80))}): cosine ${value}`);
    });

    const int8 = new UseLiteEmbedder({ engine: 'onnx', threads: 2, intraOpThreads: 1, quantized: true });
    try {
      const quantized = await int8.embed(texts);
      const int8Cosines = quantized.map((vector, i) => cosine(vector, reference[i] as Float32Array));
      const int8Worst = Math.min(...int8Cosines);
      console.log(
        `use-lite onnx int8 vs tfjs: min cosine ${int8Worst.toFixed(5)}, mean ${(int8Cosines.reduce((a, b) => a + b, 0) / int8Cosines.length).toFixed(5)}`,
      );
      expect(int8Worst).toBeGreaterThanOrEqual(MIN_COSINE_INT8);
    } finally {
      await int8.close();
    }
  }, 300_000);

  test('a batch that ends with empty texts still gets one vector per text, the same as alone', async () => {
    const texts = ['first text', '', 'third text', '', ''];
    const together = await onnx.embed(texts);
    expect(together.length).toBe(texts.length);
    const [empty] = await onnx.embed(['']);
    for (const index of [1, 3, 4]) expect(cosine(together[index] as Float32Array, empty as Float32Array)).toBeGreaterThan(0.99999);
    const [third] = await onnx.embed(['third text']);
    expect(cosine(together[2] as Float32Array, third as Float32Array)).toBeGreaterThan(0.99999);
  });
});

describe('engine choice and fallback', () => {
  const broken: UseLiteModelFiles = { ...files, model: join(scratch, 'broken-model.json') };
  beforeAll(() => {
    writeFileSync(broken.model, JSON.stringify(withUnknownOp()));
  });

  test('the default engine is onnx', async () => {
    const embedder = new UseLiteEmbedder({ threads: 1 });
    try {
      expect(embedder.engine).toBe('onnx');
      const [vector] = await embedder.embed(['hello']);
      expect(vector?.length).toBe(512);
      expect(embedder.engine).toBe('onnx');
    } finally {
      await embedder.close();
    }
  });

  test('auto falls back to tfjs when the model cannot be converted, warns once, and gives the same vectors', async () => {
    const warnings: string[] = [];
    setUseLiteWarningListener((message) => warnings.push(message));
    const fallback = new UseLiteEmbedder({ threads: 1, modelFiles: broken });
    const onnx = new UseLiteEmbedder({ engine: 'onnx', threads: 1 });
    try {
      const texts = ['The cat sat on the mat.', 'Stock markets fell sharply today.'];
      const [fromFallback, fromOnnx] = await Promise.all([fallback.embed(texts), onnx.embed(texts)]);
      expect(fallback.engine).toBe('tfjs');
      await fallback.embed(['still tfjs']);
      expect(warnings.length).toBe(1);
      expect(warnings[0]).toMatch(/FancyNewOp.*falls back to tfjs/);
      texts.forEach((_, i) => {
        expect(cosine(fromFallback[i] as Float32Array, fromOnnx[i] as Float32Array)).toBeGreaterThan(MIN_COSINE);
      });
    } finally {
      setUseLiteWarningListener((message) => console.warn(`knode: ${message}`));
      await Promise.all([fallback.close(), onnx.close()]);
    }
  }, 60_000);

  test('engine onnx does not fall back: the caller sees why it cannot start', async () => {
    const embedder = new UseLiteEmbedder({ engine: 'onnx', threads: 1, modelFiles: broken });
    try {
      await expect(embedder.embed(['anything'])).rejects.toThrow(/could not start.*FancyNewOp/);
      expect(embedder.engine).toBe('onnx');
    } finally {
      await embedder.close();
    }
  });
});

/** tfjs' vectors for `texts`, from the temporary folder when this exact computation was done before. */
