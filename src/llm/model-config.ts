/**
 * A model's configuration as knode uses it, per dtype: one type, its defaults applied in one place
 * (`withModelDefaults`), read by the providers as it is. Also the checks of a configuration that no schema
 * can express (a GGUF file).
 */
import { accessSync, closeSync, constants, openSync, readSync, statSync } from 'node:fs';
import type { Configuration } from '../security/secret-config.ts';
import { coreCount } from '../util/cores.ts';
import { checkObject } from '../util/json-schema.ts';
import { MODEL_CONFIGURATION_SCHEMAS, type ModelDtype } from './model-schemas.ts';

/**
 * dtype `openai`, checked, defaults filled in, secrets opened (the API key in clear). Keys knode does not
 * know are kept as given; a known optional key given as null stays null (not set), as does an empty string.
 */
export interface OpenAIConfiguration {
  readonly [key: string]: unknown;
  readonly model: string;
  /** Without a trailing slash. */
  readonly base_url: string;
  readonly api_key?: string | null;
  readonly timeout_ms: number;
  readonly system_prompt?: string | null;
  readonly cost_per_1k_prompt_tokens: number;
  readonly cost_per_1k_completion_tokens: number;
}

/** dtype `llama_cpp`, likewise. */
export interface LlamaCppConfiguration {
  readonly [key: string]: unknown;
  /** Absolute path of the .gguf file. */
  readonly model_path: string;
  /** Tokens; 0 or absent: as large as memory allows. */
  readonly context_size?: number | null;
  /** The core count unless given. */
  readonly threads: number;
  readonly gpu_layers?: number | null;
  readonly system_prompt?: string | null;
  readonly cost_per_1k_prompt_tokens: number;
  readonly cost_per_1k_completion_tokens: number;
}

/** A model's dtype with the configuration of that dtype. */
export type ModelSettings =
  | { readonly dtype: 'openai'; readonly configuration: OpenAIConfiguration }
  | { readonly dtype: 'llama_cpp'; readonly configuration: LlamaCppConfiguration };

export type ModelConfiguration = ModelSettings['configuration'];

/**
 * The one place a model configuration's defaults are applied, to one that passed its schema (when it is
 * stored) or was stored after passing it (when it is read: a row written before a key had a default lacks
 * it): the schema's (model-schemas.ts: base_url, timeout_ms, prices), then those no schema can say. Keys as
 * given come first, in their order.
 */
export function withModelDefaults(dtype: 'openai', configuration: Configuration): OpenAIConfiguration;
export function withModelDefaults(dtype: 'llama_cpp', configuration: Configuration): LlamaCppConfiguration;
export function withModelDefaults(dtype: ModelDtype, configuration: Configuration): ModelConfiguration;
export function withModelDefaults(dtype: ModelDtype, configuration: Configuration): ModelConfiguration {
  const { value } = checkObject(MODEL_CONFIGURATION_SCHEMAS[dtype], configuration);
  if (dtype === 'openai') {
    return { ...value, base_url: String(value.base_url).replace(/\/+$/, '') } as OpenAIConfiguration;
  }
  // 0 means "the default" too: node-llama-cpp's own default (4) is far too few or too many.
  return { ...value, threads: (value.threads as number | null | undefined) || coreCount() } as LlamaCppConfiguration;
}

/** A model's settings, its configuration with the defaults applied. */
export function modelSettings(dtype: ModelDtype, configuration: Configuration): ModelSettings {
  return { dtype, configuration: withModelDefaults(dtype, configuration) } as ModelSettings;
}

/** Why a path cannot be a GGUF model (missing, unreadable, wrong name or magic), or null when it can. */
export function ggufFileProblem(path: string): string | null {
  if (!path.toLowerCase().endsWith('.gguf')) return 'must be a .gguf file';
  let fd: number | undefined;
  try {
    if (!statSync(path).isFile()) return 'is not a file';
    accessSync(path, constants.R_OK);
    fd = openSync(path, 'r');
    const magic = Buffer.alloc(4);
    const read = readSync(fd, magic, 0, 4, 0);
    if (read < 4 || magic.toString('latin1') !== 'GGUF') return 'is not a GGUF file (wrong magic bytes)';
    return null;
  } catch (error) {
    return readProblem(error);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A file system error said the way the console shows it. */
function readProblem(error: unknown): string {
  const code = error instanceof Error && 'code' in error ? String(error.code) : '';
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'file does not exist';
  if (code === 'EACCES' || code === 'EPERM') return 'file is not readable';
  return 'file cannot be read';
}
