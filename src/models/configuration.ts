import { isAbsolute } from 'node:path';
import { enforceConfigurationLimits, Issues, rejectMaskedSecrets } from '../http/issues.ts';
import { OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_TIMEOUT_MS } from '../llm/model-config.ts';
import { MODEL_DTYPES, type ModelDtype, validateModelConfiguration } from '../llm/registry.ts';
import type { Configuration } from '../security/secret-config.ts';
import { coreCount } from '../util/cores.ts';

export { MODEL_DTYPES, type ModelDtype };

/**
 * Checks a model configuration with its provider's rules (API-CONTRACT 4) and returns it with the
 * defaults filled in, so what is stored says how the model runs. Unknown keys are kept as given.
 */
export function normalizeModelConfiguration(dtype: ModelDtype, input: Configuration): Configuration {
  enforceConfigurationLimits(input);
  const issues = new Issues(['body', 'configuration']);
  rejectMaskedSecrets(issues, input);
  const problems = validateModelConfiguration(dtype, input);
  for (const issue of problems) issues.add(issue.field, issue.msg, issue.type);
  // A relative path would depend on the folder knode happens to be started from.
  const pathIsFine = !problems.some((issue) => issue.field === 'model_path');
  if (dtype === 'llama_cpp' && pathIsFine && typeof input.model_path === 'string' && !isAbsolute(input.model_path)) {
    issues.add('model_path', 'Must be an absolute path to a .gguf file', 'value_error');
  }
  issues.throwIfAny();
  const normalized: Configuration = {
    ...input,
    cost_per_1k_prompt_tokens: input.cost_per_1k_prompt_tokens ?? 0,
    cost_per_1k_completion_tokens: input.cost_per_1k_completion_tokens ?? 0,
  };
  if (dtype === 'openai') {
    normalized.base_url = (typeof input.base_url === 'string' ? input.base_url : OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
    normalized.timeout_ms = input.timeout_ms ?? OPENAI_DEFAULT_TIMEOUT_MS;
  } else {
    normalized.threads = input.threads || coreCount();
  }
  return normalized;
}
