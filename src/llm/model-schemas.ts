import { Type } from 'typebox';
import { BASE_URL_FORMAT, NOT_BLANK } from '../util/json-schema.ts';

/**
 * What a model's configuration may hold, per dtype (API-CONTRACT 4): types, ranges and defaults, served as
 * they are to clients that build forms. A key given as null counts as not given, and unknown keys are
 * kept as given. What no schema can say is checked in code (registry.ts): `model_path` is an absolute
 * path to a readable GGUF file; `threads` defaults to the core count of the machine (model-config.ts, where
 * every default is applied).
 */

export const MODEL_DTYPES = ['openai', 'llama_cpp'] as const;
export type ModelDtype = (typeof MODEL_DTYPES)[number];

const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const OPENAI_DEFAULT_TIMEOUT_MS = 60_000;

// One hour: a longer wait is a hung server, and setTimeout cannot wait past 24.8 days anyway.
const MAX_TIMEOUT_MS = 3_600_000;

const Price = (description: string) => Type.Optional(Type.Number({ minimum: 0, default: 0, description }));
const Count = (description: string) => Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description }));
const SystemPrompt = Type.Optional(Type.String({ description: 'Sent as the first system message of every generation' }));

const OpenAIConfigurationSchema = Type.Object(
  {
    model: Type.String({ minLength: 1, pattern: NOT_BLANK, description: 'The model name the server knows, e.g. gpt-4o-mini or llama3.2' }),
    base_url: Type.Optional(Type.String({ format: BASE_URL_FORMAT, default: OPENAI_DEFAULT_BASE_URL })),
    api_key: Type.Optional(Type.String({ description: 'Stored encrypted, shown masked' })),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TIMEOUT_MS, default: OPENAI_DEFAULT_TIMEOUT_MS })),
    system_prompt: SystemPrompt,
    cost_per_1k_prompt_tokens: Price('Price of a thousand prompt tokens'),
    cost_per_1k_completion_tokens: Price('Price of a thousand completion tokens'),
  },
  { description: 'Any OpenAI-compatible server: OpenAI, Ollama, vLLM, LM Studio, llama.cpp server' },
);

const LlamaCppConfigurationSchema = Type.Object(
  {
    model_path: Type.String({ minLength: 1, pattern: NOT_BLANK, description: 'Absolute path of a readable .gguf file' }),
    context_size: Count('Tokens; 0 or absent: as large as memory allows'),
    threads: Count('0 or absent: one per core of this machine'),
    gpu_layers: Count('Layers offloaded to a GPU'),
    system_prompt: SystemPrompt,
    cost_per_1k_prompt_tokens: Price('Price of a thousand prompt tokens'),
    cost_per_1k_completion_tokens: Price('Price of a thousand completion tokens'),
  },
  { description: 'A local GGUF model, run by node-llama-cpp on this machine' },
);

/** The configuration schema of each model dtype. */
export const MODEL_CONFIGURATION_SCHEMAS = {
  openai: OpenAIConfigurationSchema,
  llama_cpp: LlamaCppConfigurationSchema,
} as const satisfies Record<ModelDtype, unknown>;
