import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { errorMessage } from '../domain/errors.ts';
import { preloadOnnxRuntime } from '../runtime/onnx-runtime.ts';
import { SerialQueue } from '../util/serial-queue.ts';
import { batches } from './batching.ts';
import type { Embedder, EmbedderOptions } from './embedder.ts';
import { l2Normalise } from './normalise.ts';
import { type EmbedderWindow, rememberedCounts } from './pieces.ts';

// Texts are sorted by length before batching so each batch pads to a similar length.
const BATCH_TEXTS = 32;

/** The part of transformers.js' feature-extraction pipeline used here. */
interface FeatureTensor {
  readonly dims: readonly number[];
  readonly data: unknown;
  dispose?(): void;
}
interface FeatureExtractor {
  (texts: string[], options: { pooling: 'mean'; normalize: boolean }): Promise<FeatureTensor>;
  dispose(): Promise<void>;
  readonly tokenizer: {
    encode(text: string, options?: { add_special_tokens?: boolean }): number[];
    /** Where the pipeline truncates its input (Infinity when the tokenizer's configuration does not say). */
    readonly model_max_length: number;
  };
  readonly model: { readonly config: { readonly max_position_embeddings?: number } };
}

/** A model that states no limit of its own reads this many tokens (BERT's and most sentence encoders'). */
const DEFAULT_WINDOW_TOKENS = 512;

// transformers.js keeps its settings (remote allowed, local folder) in one global `env`: loads are
// serialised so two embedders with different settings cannot interleave between setting and reading.
const loads = new SerialQueue();

/**
 * A sentence-embedding ONNX model through @huggingface/transformers (onnxruntime-node, CPU), mean
 * pooled and normalised. `model` is a folder path (absolute, or starting with `.`) or a hub id looked up
 * in `<dataDir>/models/<id>/`; it is downloaded there from the hub only when `allowDownload` is true.
 */
export async function createTransformersEmbedder(model: string, options: EmbedderOptions): Promise<Embedder> {
  const load = () => loads.run(() => loadExtractor(model, options));
  const extractor = await load();
  try {
    const [probe] = await extract(extractor, ['dimension probe']);
    if (!probe || probe.length === 0) throw new Error('the model returned an empty vector');
    return new TransformersEmbedder(
      `transformers:${model}`,
      probe.length,
      windowOf(extractor, modelLocation(model, options).folder),
      extractor,
      load,
    );
  } catch (error) {
    await extractor.dispose();
    throw new Error(`transformers model "${model}" does not produce sentence embeddings: ${message(error)}`);
  }
}

class TransformersEmbedder implements Embedder {
  // onnxruntime already spreads one batch over every core; running two batches at once would only
  // make them compete, and queueing per batch lets a query overtake a long ingestion.
  private readonly queue = new SerialQueue();
  private extractor: FeatureExtractor | undefined;

  constructor(
    readonly id: string,
    readonly dimension: number,
    readonly window: EmbedderWindow,
    extractor: FeatureExtractor,
    private readonly load: () => Promise<FeatureExtractor>,
  ) {
    this.extractor = extractor;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const order = texts.map((_, index) => index).sort((a, b) => (texts[a]?.length ?? 0) - (texts[b]?.length ?? 0));
    const vectors = new Array<Float32Array>(texts.length);
    for (const batch of batches(order, BATCH_TEXTS)) {
      signal?.throwIfAborted();
      const embedded = await this.queue.run(async () => {
        signal?.throwIfAborted();
        this.extractor ??= await this.load();
        return extract(
          this.extractor,
          batch.map((index) => texts[index] ?? ''),
        );
      });
      batch.forEach((index, position) => {
        const vector = embedded[position];
        if (!vector || vector.length !== this.dimension) {
          throw new Error(`${this.id} returned a vector of ${vector?.length ?? 0} dimensions, expected ${this.dimension}`);
        }
        vectors[index] = l2Normalise(vector);
      });
    }
    return vectors;
  }

  /** Frees the model once queued batches are done; a later call loads it again (apps may share it). */
  async close(): Promise<void> {
    await this.queue.run(async () => {
      const extractor = this.extractor;
      this.extractor = undefined;
      await extractor?.dispose();
    });
  }
}

/**
 * The tokens the model reads of a text: the least of the tokenizer's `model_max_length` (where the pipeline
 * truncates), the model's position embeddings and sentence-transformers' `max_seq_length` (the length it was
 * trained on: all-MiniLM-L6-v2 reads 512 positions but was trained on 256), less the special tokens.
 */
function windowOf(extractor: FeatureExtractor, folder: string): EmbedderWindow {
  const { tokenizer } = extractor;
  const limits = [tokenizer.model_max_length, extractor.model.config.max_position_embeddings, sentenceBertLength(folder)].filter(
    (limit): limit is number => typeof limit === 'number' && Number.isFinite(limit) && limit > 0,
  );
  const special = tokenizer.encode('', { add_special_tokens: true }).length;
  const tokens = Math.max(1, (limits.length > 0 ? Math.min(...limits) : DEFAULT_WINDOW_TOKENS) - special);
  return { tokens, tokensOf: rememberedCounts((word) => tokenizer.encode(word, { add_special_tokens: false }).length) };
}

/** sentence_bert_config.json's `max_seq_length`, when the folder has one. */
function sentenceBertLength(folder: string): number | undefined {
  try {
    const config = JSON.parse(readFileSync(join(folder, 'sentence_bert_config.json'), 'utf8')) as { max_seq_length?: unknown };
    return typeof config.max_seq_length === 'number' ? config.max_seq_length : undefined;
  } catch {
    return undefined;
  }
}

/** The model's folder: a path as given (`isFolder`), or a hub id under `<dataDir>/models/`. */
function modelLocation(model: string, options: EmbedderOptions): { folder: string; isFolder: boolean } {
  const isFolder = isAbsolute(model) || model.startsWith('.');
  return { folder: isFolder ? resolve(model) : join(resolve(options.dataDir), 'models', model), isFolder };
}

async function loadExtractor(model: string, options: EmbedderOptions): Promise<FeatureExtractor> {
  const modelsDir = join(resolve(options.dataDir), 'models') + sep;
  const { folder, isFolder } = modelLocation(model, options);
  if (!existsSync(folder) && (isFolder || !options.allowDownload)) {
    const hint = isFolder ? '' : '; put the model folder there or set SVC_ALLOW_MODEL_DOWNLOAD=true';
    throw new Error(`transformers model "${model}" not found at ${folder}${hint}`);
  }
  // Imported here, not at the top: the compiled binary must load libonnxruntime before this import
  // (and start-up need not load transformers.js at all).
  preloadOnnxRuntime();
  const { env, pipeline } = await import('@huggingface/transformers');
  env.allowLocalModels = true;
  env.allowRemoteModels = options.allowDownload;
  env.localModelPath = modelsDir;
  env.cacheDir = modelsDir; // a download lands where the next start looks for it, in the same layout
  try {
    const extractor = await pipeline('feature-extraction', isFolder ? folder : model, {
      local_files_only: !options.allowDownload,
      cache_dir: modelsDir,
      device: 'cpu',
      dtype: chooseDtype(folder),
    });
    return extractor as unknown as FeatureExtractor;
  } catch (error) {
    throw new Error(`transformers model "${model}" could not be loaded: ${message(error)}`);
  }
}

/** Full precision when the folder has it; many exported models ship only the quantized file. */
function chooseDtype(folder: string): 'fp32' | 'q8' {
  const has = (file: string) => existsSync(join(folder, 'onnx', file));
  return !has('model.onnx') && has('model_quantized.onnx') ? 'q8' : 'fp32';
}

async function extract(extractor: FeatureExtractor, texts: string[]): Promise<Float32Array[]> {
  const output = await extractor(texts, { pooling: 'mean', normalize: true });
  try {
    const [rows, width] = output.dims;
    if (output.dims.length !== 2 || rows !== texts.length || !width) {
      throw new Error(`unexpected output shape [${output.dims.join(', ')}]`);
    }
    const data = output.data instanceof Float32Array ? output.data : Float32Array.from(output.data as ArrayLike<number>);
    return Array.from({ length: rows }, (_, row) => data.slice(row * width, (row + 1) * width));
  } finally {
    output.dispose?.();
  }
}

function message(error: unknown): string {
  return errorMessage(error);
}
