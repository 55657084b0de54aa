import { describe, expect, test } from 'bun:test';
import { estimateTokens, maxGenerationCost, modelPrices, usageCost } from '../src/llm/costs.ts';

describe('model costs', () => {
  test('prices come from the per-1k configuration keys and default to 0', () => {
    expect(modelPrices({ cost_per_1k_prompt_tokens: 0.5, cost_per_1k_completion_tokens: 1.5 })).toEqual({
      promptPer1k: 0.5,
      completionPer1k: 1.5,
    });
    expect(modelPrices({})).toEqual({ promptPer1k: 0, completionPer1k: 0 });
  });

  test('a broken stored price costs nothing rather than failing queries', () => {
    expect(modelPrices({ cost_per_1k_prompt_tokens: '1', cost_per_1k_completion_tokens: -2 })).toEqual({
      promptPer1k: 0,
      completionPer1k: 0,
    });
    expect(modelPrices({ cost_per_1k_prompt_tokens: Number.POSITIVE_INFINITY })).toEqual({ promptPer1k: 0, completionPer1k: 0 });
  });

  test('cost is prompt and completion tokens at their own per-1k prices', () => {
    const prices = { promptPer1k: 0.5, completionPer1k: 1.5 };
    expect(usageCost({ prompt_tokens: 1000, completion_tokens: 1000 }, prices)).toBe(2);
    expect(usageCost({ prompt_tokens: 200, completion_tokens: 100 }, prices)).toBe(0.25);
    expect(usageCost({ prompt_tokens: 0, completion_tokens: 0 }, prices)).toBe(0);
  });

  test('free models cost 0', () => {
    expect(usageCost({ prompt_tokens: 12345, completion_tokens: 678 }, modelPrices({}))).toBe(0);
  });

  test('binary floating-point noise is rounded away', () => {
    // 100 * 0.001 + 200 * 0.001 is 0.30000000000000004 in plain arithmetic.
    expect(usageCost({ prompt_tokens: 100, completion_tokens: 200 }, { promptPer1k: 1, completionPer1k: 1 })).toBe(0.3);
    expect(usageCost({ prompt_tokens: 1, completion_tokens: 0 }, { promptPer1k: 0.00015, completionPer1k: 0 })).toBe(0.00000015);
  });

  test('the most a generation can cost counts max_tokens as completion', () => {
    expect(maxGenerationCost(500, 100, { promptPer1k: 2, completionPer1k: 10 })).toBe(2);
  });

  test('without a tokenizer, tokens are estimated at four characters each, rounded up', () => {
    expect(estimateTokens(0)).toBe(0);
    expect(estimateTokens(1)).toBe(1);
    expect(estimateTokens(8)).toBe(2);
    expect(estimateTokens(9)).toBe(3);
  });
});
