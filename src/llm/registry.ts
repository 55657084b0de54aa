/**
 * Model types: which provider serves a dtype, and what its configuration must look like
 * (API-CONTRACT 4). Services call `validateModelConfiguration` before storing a model (422 on issues)
 * and `createProvider` with the opened configuration (secrets decrypted) for each use.
 */
import { isAbsolute } from 'node:path';
import { isHttpUrl } from '../util/url.ts';
import { LlamaCppChatProvider, type LocalModelRegistry } from './llama-cpp.ts';
import { ggufFileProblem, llamaCppModelConfig, openAIModelConfig } from './model-config.ts';
import { OpenAIChatProvider } from './openai.ts';
import type { ChatProvider } from './provider.ts';

export const MODEL_DTYPES = ['openai', 'llama_cpp'] as const;
export type ModelDtype = (typeof MODEL_DTYPES)[number];

export function isModelDtype(value: unknown): value is ModelDtype {
  return typeof value === 'string' && (MODEL_DTYPES as readonly string[]).includes(value);
}

export interface ProviderDeps {
  /** Shared by every llama_cpp provider of the process (one loaded model per file). */
  localModels: LocalModelRegistry;
  /** For the openai dtype; the global fetch otherwise. */
  fetch?: typeof fetch;
}

/**
 * The provider of a model. `configuration` is the opened one (API key decrypted): create the provider
 * for the call and drop it afterwards, so the key is not kept in memory longer than needed. It is
 * cheap: local weights live in `deps.localModels`, not in the provider.
 */
export function createProvider(dtype: ModelDtype, configuration: Readonly<Record<string, unknown>>, deps: ProviderDeps): ChatProvider {
  switch (dtype) {
    case 'openai':
      return new OpenAIChatProvider(openAIModelConfig(configuration), deps.fetch ? { fetch: deps.fetch } : {});
    case 'llama_cpp':
      return new LlamaCppChatProvider(llamaCppModelConfig(configuration), deps.localModels);
    default:
      throw new Error(`Unknown model dtype '${String(dtype)}'`);
  }
}

/** One problem with one configuration key; the service puts it at `loc: ["body", "configuration", field]`. */
export interface ConfigurationIssue {
  field: string;
  msg: string;
  type: string;
}

type Rule = (value: unknown, field: string) => ConfigurationIssue | null;

const present = (value: unknown) => value !== undefined && value !== null;

const requiredString: Rule = (value, field) => {
  if (!present(value)) return { field, msg: 'Field required', type: 'missing' };
  if (typeof value !== 'string') return { field, msg: 'Input should be a valid string', type: 'string_type' };
  if (value.trim() === '') return { field, msg: 'String should not be empty', type: 'string_too_short' };
  return null;
};

const optionalString: Rule = (value, field) =>
  present(value) && typeof value !== 'string' ? { field, msg: 'Input should be a valid string', type: 'string_type' } : null;

const httpUrl: Rule = (value, field) => {
  if (!present(value)) return null;
  if (typeof value !== 'string') return { field, msg: 'Input should be a valid string', type: 'string_type' };
  return isHttpUrl(value) ? null : { field, msg: 'Input should be a valid http or https URL', type: 'url_parsing' };
};

function integerRule(minimum: number, maximum = Number.MAX_SAFE_INTEGER): Rule {
  return (value, field) => {
    if (!present(value)) return null;
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      return { field, msg: 'Input should be a valid integer', type: 'int_type' };
    }
    if (value < minimum) return { field, msg: `Input should be greater than or equal to ${minimum}`, type: 'greater_than_equal' };
    if (value > maximum) return { field, msg: `Input should be less than or equal to ${maximum}`, type: 'less_than_equal' };
    return null;
  };
}

const price: Rule = (value, field) => {
  if (!present(value)) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) return { field, msg: 'Input should be a valid number', type: 'float_type' };
  if (value < 0) return { field, msg: 'Input should be greater than or equal to 0', type: 'greater_than_equal' };
  return null;
};

const ggufPath: Rule = (value, field) => {
  const missing = requiredString(value, field);
  if (missing) return missing;
  const path = value as string;
  const problem = ggufFileProblem(path);
  if (problem) return { field, msg: `${isAbsolute(path) ? path : `'${path}'`}: ${problem}`, type: 'value_error' };
  return null;
};

// One hour: a longer wait is a hung server, and setTimeout cannot wait past 24.8 days anyway.
const MAX_TIMEOUT_MS = 3_600_000;

const COMMON_RULES: Record<string, Rule> = {
  system_prompt: optionalString,
  cost_per_1k_prompt_tokens: price,
  cost_per_1k_completion_tokens: price,
};

const RULES: Record<ModelDtype, Record<string, Rule>> = {
  openai: {
    model: requiredString,
    base_url: httpUrl,
    api_key: optionalString,
    timeout_ms: integerRule(1, MAX_TIMEOUT_MS),
    ...COMMON_RULES,
  },
  llama_cpp: {
    model_path: ggufPath,
    context_size: integerRule(0),
    threads: integerRule(0),
    gpu_layers: integerRule(0),
    ...COMMON_RULES,
  },
};

/**
 * The problems of a model configuration (empty when valid). Unknown keys are allowed and kept.
 * `llama_cpp`'s `model_path` must be an existing, readable file named `*.gguf` that starts with the
 * GGUF magic; relative paths resolve against the server's working directory.
 */
export function validateModelConfiguration(dtype: ModelDtype, configuration: unknown): ConfigurationIssue[] {
  const rules = isModelDtype(dtype) ? RULES[dtype] : undefined;
  if (!rules) {
    return [{ field: 'dtype', msg: `Unknown model dtype (expected one of: ${MODEL_DTYPES.join(', ')})`, type: 'enum' }];
  }
  if (typeof configuration !== 'object' || configuration === null || Array.isArray(configuration)) {
    return [{ field: '', msg: 'Input should be a valid dictionary', type: 'dict_type' }];
  }
  const config = configuration as Record<string, unknown>;
  const issues: ConfigurationIssue[] = [];
  for (const [field, rule] of Object.entries(rules)) {
    const issue = rule(config[field], field);
    if (issue) issues.push(issue);
  }
  return issues;
}
