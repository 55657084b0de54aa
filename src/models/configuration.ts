import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isAbsolute } from 'node:path';
import { Issues, rejectMaskedSecrets, optionalInteger, optionalNumber, optionalString } from '../http/issues.ts';
import type { Configuration } from '../security/secret-config.ts';
import { isHttpUrl } from '../util/url.ts';

export const MODEL_DTYPES = ['openai', 'llama_cpp'] as const;
export type ModelDtype = (typeof MODEL_DTYPES)[number];

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * Checks a model configuration for its dtype (API-CONTRACT 4) and returns it with defaults filled in.
 * Unknown keys are kept as given.
 */
export function normalizeModelConfiguration(dtype: ModelDtype, input: Configuration): Configuration {
  const issues = new Issues(['body', 'configuration']);
  rejectMaskedSecrets(issues, input);
  const normalized: Configuration = { ...input };
  normalized.system_prompt = optionalString(issues, input, 'system_prompt', { maxLength: 20_000 });
  normalized.cost_per_1k_prompt_tokens = optionalNumber(issues, input, 'cost_per_1k_prompt_tokens', { min: 0, max: 1_000_000, fallback: 0 });
  normalized.cost_per_1k_completion_tokens = optionalNumber(issues, input, 'cost_per_1k_completion_tokens', { min: 0, max: 1_000_000, fallback: 0 });
  if (dtype === 'openai') {
    normalized.model = requiredString(issues, input, 'model', 200);
    const baseUrl = optionalString(issues, input, 'base_url', { maxLength: 2000, fallback: DEFAULT_OPENAI_BASE_URL });
    if (baseUrl !== undefined && !isHttpUrl(baseUrl)) issues.add('base_url', 'Input should be an http or https URL', 'url_parsing');
    normalized.base_url = baseUrl?.replace(/\/+$/, '');
    normalized.api_key = optionalString(issues, input, 'api_key', { maxLength: 2000 });
    normalized.timeout_ms = optionalInteger(issues, input, 'timeout_ms', { min: 100, max: 3_600_000, fallback: 60_000 });
  } else {
    normalized.model_path = checkGgufPath(issues, input.model_path);
    normalized.context_size = optionalInteger(issues, input, 'context_size', { min: 16, max: 1_048_576 });
    normalized.threads = optionalInteger(issues, input, 'threads', { min: 1, max: 1024, fallback: availableParallelism() });
    normalized.gpu_layers = optionalInteger(issues, input, 'gpu_layers', { min: 0, max: 10_000 });
  }
  issues.throwIfAny();
  for (const key of Object.keys(normalized)) if (normalized[key] === undefined) delete normalized[key];
  return normalized;
}

function requiredString(issues: Issues, input: Configuration, key: string, maxLength: number): string | undefined {
  const value = input[key];
  if (value === undefined || value === null || value === '') {
    issues.add(key, 'Field required', 'missing');
    return undefined;
  }
  return optionalString(issues, input, key, { maxLength });
}

const GGUF_MAGIC = 'GGUF';

/** A `model_path` must be an absolute path to a readable file that starts like a GGUF file. */
function checkGgufPath(issues: Issues, value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') {
    issues.add('model_path', 'Field required', 'missing');
    return undefined;
  }
  if (typeof value !== 'string' || value.length > 4096 || !isAbsolute(value)) {
    issues.add('model_path', 'Must be an absolute path to a .gguf file', 'value_error');
    return undefined;
  }
  if (!value.toLowerCase().endsWith('.gguf')) {
    issues.add('model_path', 'Must be a .gguf file', 'value_error');
    return undefined;
  }
  try {
    if (!statSync(value).isFile()) throw new Error('not a file');
    const fd = openSync(value, 'r');
    try {
      const magic = Buffer.alloc(4);
      readSync(fd, magic, 0, 4, 0);
      if (magic.toString('latin1') !== GGUF_MAGIC) {
        issues.add('model_path', `'${value}' is not a GGUF file`, 'value_error');
        return undefined;
      }
    } finally {
      closeSync(fd);
    }
  } catch {
    issues.add('model_path', `File '${value}' does not exist or cannot be read`, 'value_error');
    return undefined;
  }
  return value;
}
