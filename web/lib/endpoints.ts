/** What the endpoint pages share: the response types in words, which ones a choice allows, and the answers' defaults. */
import type { GenerationDefaults, ResponseType } from '../views.ts';

/** Each response type as people read it. */
export const RESPONSE_TYPE_LABELS: Record<ResponseType, string> = {
  raw: 'Search results',
  summary: 'Model answer',
  both: 'Answer with sources',
};

/**
 * The answer length the console gives a new endpoint: 100 tokens (the specification's) cut a real model's answer
 * at about 75 words, mid-sentence; 1024 (about 750 words) lets it answer from its five passages in full, and still
 * bounds a model that runs on (and the most a paid query can cost, which counts the prompt and max_tokens).
 */
export const ANSWER_TOKENS = 1024;

/** raw needs a dataset, summary a model; both needs both. */
export function allowedTypes(datasetId: string, modelId: string): ResponseType[] {
  if (datasetId && modelId) return ['both', 'summary', 'raw'];
  if (datasetId) return ['raw'];
  if (modelId) return ['summary'];
  return [];
}

/**
 * What a query that says nothing else gets (`generation_defaults`): an answer length, and no stop at the first
 * line break (the specification's default stop sequence, a new line, cuts every answer to its first line).
 */
export function generationDefaults(maxTokens: string, fullAnswers: boolean): GenerationDefaults {
  return {
    ...(maxTokens.trim() === '' ? {} : { max_tokens: Number(maxTokens) }),
    ...(fullAnswers ? { stop_sequences: [] } : {}),
  };
}
