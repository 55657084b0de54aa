import type { GenerationDefaults } from '../endpoints/codec.ts';
import { SPEC_MAX_TOKENS, SPEC_TEMPERATURE } from '../http/field-bounds.ts';
import type { ChatMessage, ChatOptions } from '../llm/provider.ts';
import type { QueryRequest } from './schemas.ts';

/** The specification's defaults of the query fields that generate (Query request). */
export const SPEC_GENERATION = { max_tokens: SPEC_MAX_TOKENS, temperature: SPEC_TEMPERATURE, stop_sequences: ['\n'] } as const;

export interface Generation {
  max_tokens: number;
  temperature: number;
  stop_sequences: string[];
  system_prompt: string | undefined;
}

/**
 * How a query generates: each field the caller sent, else the endpoint's default (API-CONTRACT 4,
 * `generation_defaults`), else the specification's.
 */
export function generationFor(
  body: { max_tokens?: number; temperature?: number; stop_sequences?: string[] },
  defaults: GenerationDefaults,
): Generation {
  return {
    max_tokens: body.max_tokens ?? defaults.max_tokens ?? SPEC_GENERATION.max_tokens,
    temperature: body.temperature ?? defaults.temperature ?? SPEC_GENERATION.temperature,
    stop_sequences: body.stop_sequences ?? defaults.stop_sequences ?? [...SPEC_GENERATION.stop_sequences],
    system_prompt: defaults.system_prompt === '' ? undefined : defaults.system_prompt,
  };
}

/** The endpoint's system prompt first, when it has one (before the references' system message). */
export function withSystemPrompt(messages: ChatMessage[], systemPrompt: string | undefined): ChatMessage[] {
  return systemPrompt ? [{ role: 'system', content: systemPrompt }, ...messages] : messages;
}

/** What the model is asked to generate with: the query's generation, its penalties and its `summarize_options`. */
export function chatOptions(body: QueryRequest, generation: Generation): ChatOptions {
  const { max_tokens, temperature, stop_sequences } = generation;
  const extra = body.extras.summarize_options ?? {};
  return {
    max_tokens,
    temperature,
    stop_sequences,
    presence_penalty: body.presence_penalty,
    frequency_penalty: body.frequency_penalty,
    ...(extra.top_p !== undefined ? { top_p: extra.top_p } : {}),
    ...(extra.seed !== undefined ? { seed: extra.seed } : {}),
    ...(extra.response_format !== undefined ? { response_format: extra.response_format as ChatOptions['response_format'] } : {}),
  };
}
