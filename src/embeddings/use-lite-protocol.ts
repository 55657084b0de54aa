import type { UseLiteModelFiles } from './use-lite-model.ts';

/** Messages between UseLiteEmbedder and its worker threads (use-lite-worker.ts, use-lite-onnx-worker.ts). */
export interface UseLiteRequest {
  readonly id: number;
  readonly texts: string[];
  /** ONNX engine only: ONNX Runtime's threads in this worker (read when the worker loads its model). */
  readonly intraOpThreads?: number;
  /** ONNX engine only: convert these files instead of the package's (read when the worker loads its model). */
  readonly modelFiles?: UseLiteModelFiles;
  /** ONNX engine only: the model with int8 dense layers. */
  readonly quantized?: boolean;
}

export type UseLiteResponse =
  | { readonly id: number; readonly vectors: Float32Array[] }
  /** `unavailable`: the engine could not load at all (the ONNX model or ONNX Runtime), rather than this batch failing. */
  | { readonly id: number; readonly error: string; readonly unavailable?: boolean };
