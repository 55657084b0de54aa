/**
 * What each model dtype's provider needs, read from a model's (opened, validated) configuration with the
 * defaults applied; and the checks of a configuration that no schema can express.
 */
import { accessSync, closeSync, constants, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { coreCount } from '../util/cores.ts';
import { ModelError } from './provider.ts';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const OPENAI_DEFAULT_TIMEOUT_MS = 60_000;

export interface OpenAIModelConfig {
  model: string;
  baseUrl: string;
  apiKey?: string;
  systemPrompt?: string;
  timeoutMs: number;
}

/** The provider's settings from a model's (opened, validated) configuration, defaults applied. */
export function openAIModelConfig(configuration: Readonly<Record<string, unknown>>): OpenAIModelConfig {
  const { model, base_url, api_key, system_prompt, timeout_ms } = configuration;
  if (typeof model !== 'string' || model.trim() === '') {
    throw new ModelError("Model configuration has no 'model' name");
  }
  return {
    model,
    baseUrl: typeof base_url === 'string' && base_url !== '' ? base_url : OPENAI_DEFAULT_BASE_URL,
    apiKey: typeof api_key === 'string' && api_key !== '' ? api_key : undefined,
    systemPrompt: typeof system_prompt === 'string' && system_prompt !== '' ? system_prompt : undefined,
    timeoutMs: typeof timeout_ms === 'number' && Number.isInteger(timeout_ms) && timeout_ms > 0 ? timeout_ms : OPENAI_DEFAULT_TIMEOUT_MS,
  };
}

export interface LlamaCppModelConfig {
  /** Absolute path of the .gguf file. */
  modelPath: string;
  /** Tokens; undefined = as large as memory allows up to DEFAULT_MAX_CONTEXT_SIZE. */
  contextSize?: number;
  threads: number;
  gpuLayers?: number;
  systemPrompt?: string;
}

function nonNegativeInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** The provider's settings from a model's (validated) configuration, defaults applied. */
export function llamaCppModelConfig(configuration: Readonly<Record<string, unknown>>): LlamaCppModelConfig {
  const { model_path, context_size, threads, gpu_layers, system_prompt } = configuration;
  if (typeof model_path !== 'string' || model_path === '') {
    throw new ModelError("Model configuration has no 'model_path'");
  }
  const contextSize = nonNegativeInteger(context_size);
  const threadCount = nonNegativeInteger(threads);
  const gpuLayers = nonNegativeInteger(gpu_layers);
  return {
    modelPath: resolve(model_path),
    ...(contextSize ? { contextSize } : {}),
    // 0 means "the default" too: node-llama-cpp's own default (4) is far too few or too many.
    threads: threadCount ? threadCount : coreCount(),
    ...(gpuLayers !== undefined ? { gpuLayers } : {}),
    ...(typeof system_prompt === 'string' && system_prompt !== '' ? { systemPrompt: system_prompt } : {}),
  };
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
    const code = error instanceof Error && 'code' in error ? String(error.code) : '';
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'file does not exist';
    if (code === 'EACCES' || code === 'EPERM') return 'file is not readable';
    return 'file cannot be read';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
