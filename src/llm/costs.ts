/**
 * A model's cost per query (API-CONTRACT 4 and 6): its configuration prices prompt and completion tokens
 * per thousand (`cost_per_1k_prompt_tokens`, `cost_per_1k_completion_tokens`, default 0).
 */
import type { Usage } from './provider.ts';

export interface ModelPrices {
  promptPer1k: number;
  completionPer1k: number;
}

function price(value: unknown): number {
  // Validation rejects anything else at create time; a price missing or broken later costs nothing
  // rather than failing every query.
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

export function modelPrices(configuration: Readonly<Record<string, unknown>>): ModelPrices {
  return {
    promptPer1k: price(configuration.cost_per_1k_prompt_tokens),
    completionPer1k: price(configuration.cost_per_1k_completion_tokens),
  };
}

/**
 * Tokens in `characters` of text without a tokenizer: about four characters a token, OpenAI's rule of
 * thumb for English. Used where no count is known: the usage a server did not report, and the prompt of
 * the cost ceiling checked before a query runs (which adds its own margin).
 */
export function estimateTokens(characters: number): number {
  return Math.ceil(characters / 4);
}

/**
 * Sums of decimal prices drift in binary (0.1 + 0.2); ten decimals keep micro-cent prices exact while
 * dropping that noise, so recorded and confirmed amounts compare equal.
 */
function roundMoney(amount: number): number {
  return Math.round(amount * 1e10) / 1e10;
}

/** `summary.cost`: what the answer cost given its usage. */
export function usageCost(usage: Pick<Usage, 'prompt_tokens' | 'completion_tokens'>, prices: ModelPrices): number {
  return roundMoney((usage.prompt_tokens / 1000) * prices.promptPer1k + (usage.completion_tokens / 1000) * prices.completionPer1k);
}

/**
 * The most a generation can cost (accounting pre-hook, API-CONTRACT 7): the prompt plus `max_tokens`
 * completion tokens.
 */
export function maxGenerationCost(promptTokens: number, maxTokens: number, prices: ModelPrices): number {
  return usageCost({ prompt_tokens: promptTokens, completion_tokens: maxTokens }, prices);
}
