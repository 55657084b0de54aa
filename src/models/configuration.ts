import { checkConfiguration } from '../http/issues.ts';
import type { CheckedLlamaCppConfiguration, CheckedOpenAIConfiguration, ModelDtype } from '../llm/model-schemas.ts';
import { checkModelConfiguration } from '../llm/registry.ts';
import type { Configuration } from '../security/secret-config.ts';
import { coreCount } from '../util/cores.ts';
import type { ModelSettings } from './codec.ts';

export { MODEL_CONFIGURATION_SCHEMAS, MODEL_DTYPES, type ModelDtype } from '../llm/model-schemas.ts';

/**
 * Checks a model configuration with its dtype's schema and the checks of its provider (API-CONTRACT 4;
 * llm/registry.ts) and returns it with the defaults filled in, so what is stored says how the model runs
 * (422 with every problem otherwise). A local model file must lie inside `roots`, the tenant's folders.
 * Unknown keys are kept as given.
 */
export function normalizeModelSettings(dtype: ModelDtype, input: Configuration, roots: readonly string[]): ModelSettings {
  const { value, issues } = checkConfiguration(input, (configuration) => checkModelConfiguration(dtype, configuration, roots));
  issues.throwIfAny();
  // Keys in the order they always had: as given, then the ones filled in.
  if (dtype === 'openai') {
    const checked = value as CheckedOpenAIConfiguration;
    return {
      dtype,
      configuration: {
        ...input,
        model: checked.model,
        cost_per_1k_prompt_tokens: checked.cost_per_1k_prompt_tokens,
        cost_per_1k_completion_tokens: checked.cost_per_1k_completion_tokens,
        base_url: checked.base_url.replace(/\/+$/, ''),
        timeout_ms: checked.timeout_ms,
      },
    };
  }
  const checked = value as CheckedLlamaCppConfiguration;
  return {
    dtype,
    configuration: {
      ...input,
      model_path: checked.model_path,
      cost_per_1k_prompt_tokens: checked.cost_per_1k_prompt_tokens,
      cost_per_1k_completion_tokens: checked.cost_per_1k_completion_tokens,
      // 0 means "the default" too: one thread per core.
      threads: checked.threads || coreCount(),
    },
  };
}
