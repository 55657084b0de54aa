/**
 * Worker thread that runs Universal Sentence Encoder lite on ONNX Runtime (onnxruntime-node, native
 * code): the TF.js graph converted to ONNX (use-lite-model.ts), fed by the same tokenizer as the tfjs
 * engine (use-lite-tokenizer.ts), so it gives the same vectors, about eight times faster per thread.
 *
 * It runs here and not on the main thread because onnxruntime-node's run() computes synchronously on
 * the calling thread (its promise only defers the start). The model is converted (or read from the
 * cache) when the first request arrives. A load failure is answered as `unavailable`, so that the
 * embedder can fall back to tfjs.
 * In the compiled binary this file must be an extra entrypoint of `bun build --compile`.
 */

import { readFileSync } from 'node:fs';
import type { Tensor as OrtTensor, InferenceSession as Session } from 'onnxruntime-node';
import { errorMessage } from '../domain/errors.ts';
import { preloadOnnxRuntime } from '../runtime/onnx-runtime.ts';
import { convertedUseLiteModel, useLiteModelFiles } from './use-lite-model.ts';
import type { UseLiteRequest, UseLiteResponse } from './use-lite-protocol.ts';
import { sparseBatch, UseLiteTokenizer, type Vocabulary } from './use-lite-tokenizer.ts';

declare const self: Worker;

interface Engine {
  readonly session: Session;
  readonly Tensor: typeof OrtTensor;
  readonly tokenizer: UseLiteTokenizer;
  /** The graph's vector for a text without tokens (computed once, when first needed). */
  emptyVector?: Float32Array;
}

const DIMENSION = 512;

let engine: Promise<Engine> | undefined;

async function load(request: UseLiteRequest): Promise<Engine> {
  const files = request.modelFiles ?? useLiteModelFiles();
  const tokenizer = new UseLiteTokenizer(JSON.parse(readFileSync(files.vocabulary, 'utf8')) as Vocabulary);
  const converted = convertedUseLiteModel(files, { quantize: request.quantized ? 'int8' : undefined });
  // In the binary, libonnxruntime must be in the process before the addon is loaded.
  preloadOnnxRuntime();
  const { InferenceSession, Tensor } = await import('onnxruntime-node');
  const options: Session.SessionOptions = {
    intraOpNumThreads: Math.max(1, request.intraOpThreads ?? 1),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // Idle pool threads would otherwise spin for a while after each batch, taking a core the other
    // worker, the parse thread or the API could use.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
  const session =
    'path' in converted ? await InferenceSession.create(converted.path, options) : await InferenceSession.create(converted.bytes, options);
  return { session, Tensor, tokenizer };
}

/** The graph's rows: one per text up to the last text that has a token (see run()). */
async function graphRows(engine: Engine, tokenized: readonly (readonly number[])[]): Promise<Float32Array[]> {
  const batch = sparseBatch(tokenized);
  if (batch.rows === 0) return [];
  const feeds = {
    indices: new engine.Tensor('int64', batch.indices, [batch.indices.length / 2, 2]),
    values: new engine.Tensor('int64', batch.values, [batch.values.length]),
  };
  const output = (await engine.session.run(feeds)).embeddings;
  try {
    if (output?.dims.length !== 2 || output.dims[0] !== batch.rows || output.dims[1] !== DIMENSION) {
      throw new Error(`the model returned a tensor of shape [${output?.dims.join(', ')}], expected [${batch.rows}, ${DIMENSION}]`);
    }
    const data = output.data as Float32Array;
    return Array.from({ length: batch.rows }, (_, row) => data.slice(row * DIMENSION, (row + 1) * DIMENSION));
  } finally {
    output?.dispose();
  }
}

/**
 * One vector per text. A text without tokens (an empty one) has no entry in the graph's sparse input:
 * the graph gives one between others the vector of an empty row, and leaves those at the end out
 * altogether; they get that same vector here.
 */
async function run(engine: Engine, tokenized: readonly (readonly number[])[]): Promise<Float32Array[]> {
  const vectors = await graphRows(engine, tokenized);
  while (vectors.length < tokenized.length) {
    engine.emptyVector ??= (await graphRows(engine, [[], [0]]))[0] as Float32Array;
    vectors.push(engine.emptyVector.slice());
  }
  return vectors;
}

async function embed(request: UseLiteRequest): Promise<UseLiteResponse> {
  engine ??= load(request);
  let loaded: Engine;
  try {
    loaded = await engine;
  } catch (error) {
    engine = undefined; // the next request tries again
    return { id: request.id, error: errorMessage(error), unavailable: true };
  }
  try {
    const tokenized = request.texts.map((text) => loaded.tokenizer.encode(text));
    return { id: request.id, vectors: await run(loaded, tokenized) };
  } catch (error) {
    return { id: request.id, error: errorMessage(error) };
  }
}

// One request at a time, in order: ONNX Runtime already uses this worker's threads for one batch.
let queue: Promise<void> = Promise.resolve();

self.onmessage = (event: MessageEvent<UseLiteRequest>) => {
  const request = event.data;
  queue = queue.then(async () => {
    const response = await embed(request);
    const transfer = 'vectors' in response ? response.vectors.map((vector) => vector.buffer as ArrayBuffer) : [];
    self.postMessage(response, transfer);
  });
};
