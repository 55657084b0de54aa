import { checkConfiguration } from '../http/issues.ts';
import { modelSettings } from '../llm/model-config.ts';
import type { ModelDtype } from '../llm/model-schemas.ts';
import { checkModelConfiguration } from '../llm/registry.ts';
import type { Configuration } from '../security/secret-config.ts';
import type { ModelSettings } from './codec.ts';

export { MODEL_CONFIGURATION_SCHEMAS, type ModelDtype } from '../llm/model-schemas.ts';

/**
 * Checks a model configuration with its dtype's schema and the checks of its provider (API-CONTRACT 4;
 * llm/registry.ts) and returns it with the defaults filled in (llm/model-config.ts), so what is stored says
 * how the model runs (422 with every problem otherwise). A local model file must lie inside `roots`, the
 * tenant's folders. Unknown keys are kept as given.
 */
export function normalizeModelSettings(dtype: ModelDtype, input: Configuration, roots: readonly string[]): ModelSettings {
  const { value, issues } = checkConfiguration(input, (configuration) => checkModelConfiguration(dtype, configuration, roots));
  issues.throwIfAny();
  return modelSettings(dtype, value);
}
