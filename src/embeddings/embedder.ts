import { createOpenAiEmbedder } from './openai.ts';
import type { EmbedderWindow } from './pieces.ts';
import { createTransformersEmbedder } from './transformers.ts';
import { UseLiteEmbedder } from './use-lite.ts';

/** Turns texts into unit-length vectors of one fixed dimension. */
export interface Embedder {
  /** The spec it was made from (`use-lite`, `use-lite-int8`, `transformers:<model>`, `openai:<model>`): what a dataset records. */
  readonly id: string;
  readonly dimension: number;
  /** How much of a text the model reads: a longer chunk is embedded as pieces that fit (pieces.ts). */
  readonly window: EmbedderWindow;
  /** One vector per text, in order, each L2-normalised. Batches internally; `signal` stops between batches. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  close?(): Promise<void>;
}

export interface EmbedderOptions {
  /** `<dataDir>/models/` is where transformers models are looked up (and downloaded to, when allowed). */
  readonly dataDir: string;
  /** SVC_ALLOW_MODEL_DOWNLOAD: may a transformers model be fetched from the Hugging Face hub? */
  readonly allowDownload: boolean;
  /**
   * For `openai:<model>`: the server (default https://api.openai.com/v1), its key, and the outbound module's
   * fetch it is called through with `scope`, the name of what that fetch may reach (outbound/reach.ts).
   */
  readonly openai?: { readonly base_url?: string; readonly api_key?: string; readonly fetch?: typeof fetch; readonly scope?: string };
}

/** The fetch a tenant's embedding server is called through, and the name of what it may reach (outbound/reach.ts). */
export type EmbedderOutbound = (tenantId: string) => Promise<{ fetch: typeof fetch; scope: string }>;

export type EmbedderSpec =
  | { readonly kind: 'use-lite'; readonly quantized: boolean }
  | { readonly kind: 'transformers'; readonly model: string }
  | { readonly kind: 'openai'; readonly model: string };

/** A spec that names no known embedder; the message is fit for a 422. */
export class EmbedderSpecError extends Error {
  override readonly name = 'EmbedderSpecError';
}

/** Parses a spec without loading anything, so a dataset's configuration can be checked when it is created. */
export function parseEmbedderSpec(spec: string): EmbedderSpec {
  const trimmed = spec.trim();
  if (trimmed === 'use-lite' || trimmed === 'use-lite-int8') return { kind: 'use-lite', quantized: trimmed === 'use-lite-int8' };
  const separator = trimmed.indexOf(':');
  const kind = separator > 0 ? trimmed.slice(0, separator) : '';
  const model = trimmed.slice(separator + 1).trim();
  if ((kind === 'transformers' || kind === 'openai') && model.length > 0) return { kind, model };
  throw new EmbedderSpecError(
    `unknown embedder "${spec}": expected use-lite, use-lite-int8, transformers:<model or folder> or openai:<model>`,
  );
}

// Models are large and slow to load: every dataset using the same spec shares one instance. Creation is
// cached as a promise so concurrent callers wait for the same load; a failed load is forgotten so a
// later call can try again (the server may come back, the model folder may appear).
const instances = new Map<string, Promise<Embedder>>();

/**
 * The shared embedder for `spec`. `use-lite` returns at once and loads its model on first use;
 * transformers and OpenAI-compatible embedders load (or call the server) once here to learn their dimension.
 */
export async function createEmbedder(spec: string, options: EmbedderOptions): Promise<Embedder> {
  const parsed = parseEmbedderSpec(spec);
  const key = cacheKey(parsed, options);
  const existing = instances.get(key);
  if (existing) return existing;
  const created = build(parsed, options);
  instances.set(key, created);
  created.catch(() => {
    if (instances.get(key) === created) instances.delete(key);
  });
  return created;
}

/**
 * The embedder a dataset's (opened) configuration names, with the server and key that an `openai:`
 * embedder finds there. Ingestion and search both use it, so they always embed alike.
 */
export function datasetEmbedder(
  configuration: { readonly embedder: string; readonly base_url?: string | null; readonly api_key?: string | null },
  settings: {
    readonly dataDir: string;
    readonly allowDownload: boolean;
    /** The outbound module's fetch for the dataset's tenant, and the name of what it may reach. */
    readonly outbound?: { readonly fetch: typeof fetch; readonly scope: string };
  },
): Promise<Embedder> {
  const { outbound, ...rest } = settings;
  return createEmbedder(configuration.embedder, {
    ...rest,
    openai: {
      base_url: configuration.base_url ?? undefined,
      api_key: configuration.api_key ?? undefined,
      ...(outbound ? { fetch: outbound.fetch, scope: outbound.scope } : {}),
    },
  });
}

async function build(spec: EmbedderSpec, options: EmbedderOptions): Promise<Embedder> {
  switch (spec.kind) {
    case 'use-lite':
      return new UseLiteEmbedder(spec.quantized ? { quantized: true } : {});
    case 'transformers':
      return createTransformersEmbedder(spec.model, options);
    case 'openai':
      return createOpenAiEmbedder(spec.model, options.openai ?? {});
  }
}

function cacheKey(spec: EmbedderSpec, options: EmbedderOptions): string {
  switch (spec.kind) {
    case 'use-lite':
      return spec.quantized ? 'use-lite-int8' : 'use-lite';
    case 'transformers':
      return JSON.stringify(['transformers', spec.model, options.dataDir]);
    case 'openai':
      // Two servers (or two keys) serving the same model name are two embedders; so are two tenants that may
      // reach different addresses (the client holds the fetch that decides it).
      return JSON.stringify([
        'openai',
        spec.model,
        options.openai?.base_url ?? '',
        options.openai?.api_key ?? '',
        options.openai?.scope ?? '',
      ]);
  }
}

/** How long closing waits for an embedder still loading (or for the batches it is running). */
const CLOSE_WAIT_MS = 2_000;

/**
 * Closes every shared embedder (at shutdown, and between tests). One still loading, because its model
 * server does not answer, is closed whenever it arrives rather than waited for: a stop must not hang on it.
 */
export async function closeEmbedders(): Promise<void> {
  const all = [...instances.values()];
  instances.clear();
  await Promise.all(
    all.map((pending) => {
      const closed = pending.then(
        (embedder) => embedder.close?.(),
        () => undefined,
      );
      return Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
    }),
  );
}
