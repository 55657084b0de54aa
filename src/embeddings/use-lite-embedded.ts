import * as tfjs from '@energetic-ai/core';
import type { EmbeddingsModelData, EmbeddingsModelSource } from '@energetic-ai/embeddings';
import type { USE_LITE_FILES } from './use-lite-files.ts';

/**
 * USE-lite inside the binary, where @energetic-ai's packages cannot find their files: they look beside
 * themselves through __dirname, which the bundler froze to the build machine's node_modules.
 * Instead tfjs is told where the embedded .wasm files are, and the model is read from the embedded
 * model.json, vocabulary and weight shards (use-lite-files.ts). Bun reads embedded files with fs and
 * Bun.file like any other, so nothing is written to disk.
 */

interface WeightsGroup {
  paths: string[];
  weights: unknown[];
}

interface ModelJson {
  modelTopology: unknown;
  weightsManifest: WeightsGroup[];
}

/** The parts of @energetic-ai/core used here: its typings re-export @tensorflow packages that are not installed. */
interface Tfjs {
  setWasmPaths(files: Record<string, string>): void;
  ready(): Promise<void>;
  loadGraphModel(handler: { load(): Promise<unknown> }): Promise<EmbeddingsModelData['model']>;
  io: {
    getModelArtifactsForJSON(
      json: ModelJson,
      loadWeights: (manifest: WeightsGroup[]) => Promise<[unknown[], ArrayBuffer]>,
    ): Promise<unknown>;
  };
}

const tf = tfjs as unknown as Tfjs;

/**
 * Points tfjs at the embedded .wasm files and returns the embedded model's source. Must run before
 * tfjs initialises its WASM backend: @energetic-ai/core starts that on import, but it only looks for
 * the .wasm file after a few awaits, so calling this at the top of the worker, synchronously, is in time.
 */
export function useEmbeddedFiles(): EmbeddingsModelSource {
  const { USE_LITE_FILES: files } = require('./use-lite-files.ts') as { USE_LITE_FILES: typeof USE_LITE_FILES };
  tf.setWasmPaths({ ...files.wasm });
  return async () => {
    // Nothing in @energetic-ai waits for the backend: from source the package's slower file reads give
    // tfjs time to start it, while embedded files are read so fast that the model would be built first.
    await tf.ready();
    const [modelJson, vocabulary] = await Promise.all([
      Bun.file(files.model).json() as Promise<ModelJson>,
      Bun.file(files.vocabulary).json() as Promise<EmbeddingsModelData['vocabulary']>,
    ]);
    const model = await tf.loadGraphModel({
      load: () => tf.io.getModelArtifactsForJSON(modelJson, (manifest) => readWeights(manifest, files.shards)),
    });
    return { model, vocabulary };
  };
}

/** What tfjs' own file loader does, with each shard looked up by name among the embedded files. */
async function readWeights(manifest: WeightsGroup[], shards: Readonly<Record<string, string>>): Promise<[unknown[], ArrayBuffer]> {
  const specs: unknown[] = [];
  const parts: Uint8Array[] = [];
  for (const group of manifest) {
    for (const name of group.paths) {
      const path = shards[name];
      if (!path) throw new Error(`USE-lite weight shard ${name} is not embedded`);
      parts.push(await Bun.file(path).bytes());
    }
    specs.push(...group.weights);
  }
  const weights = new Uint8Array(parts.reduce((total, part) => total + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    weights.set(part, offset);
    offset += part.byteLength;
  }
  return [specs, weights.buffer];
}
