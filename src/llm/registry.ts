/**
 * Model types: which provider serves a dtype, and what its configuration must look like
 * (API-CONTRACT 4). Services call `checkModelConfiguration` before storing a model (422 on issues)
 * and `createProvider` with the opened settings (secrets decrypted, defaults applied) for each use.
 */
import { isAbsolute } from 'node:path';
import { checkObject, type ObjectCheck } from '../util/json-schema.ts';
import { placeInside } from '../util/paths.ts';
import { LlamaCppChatProvider } from './llama-cpp/chat-provider.ts';
import type { LocalModelRegistry } from './llama-cpp/model-registry.ts';
import { ggufFileProblem, type ModelSettings } from './model-config.ts';
import { MODEL_CONFIGURATION_SCHEMAS, MODEL_DTYPES, type ModelDtype } from './model-schemas.ts';
import { OpenAIChatProvider } from './openai.ts';
import type { ChatProvider } from './provider.ts';

export { MODEL_DTYPES, type ModelDtype };

export interface ProviderDeps {
  /** Shared by every llama_cpp provider of the process (one loaded model per file). */
  localModels: LocalModelRegistry;
  /** For the openai dtype; the global fetch otherwise. */
  fetch?: typeof fetch;
}

/**
 * The provider of a model. `settings` are the opened ones (API key decrypted, defaults applied): create the
 * provider for the call and drop it afterwards, so the key is not kept in memory longer than needed. It is
 * cheap: local weights live in `deps.localModels`, not in the provider.
 */
export function createProvider(settings: ModelSettings, deps: ProviderDeps): ChatProvider {
  switch (settings.dtype) {
    case 'openai':
      return new OpenAIChatProvider(settings.configuration, deps.fetch ? { fetch: deps.fetch } : {});
    case 'llama_cpp':
      return new LlamaCppChatProvider(settings.configuration, deps.localModels);
    default:
      throw new Error(`Unknown model dtype '${String((settings as { dtype: unknown }).dtype)}'`);
  }
}

/**
 * Checks a model configuration against its dtype's schema (model-schemas.ts), then what no schema can
 * say: a llama_cpp `model_path` must be an absolute path to an existing, readable file named `*.gguf`
 * that starts with the GGUF magic, and, with `roots` (the tenant's folders), lie inside them, which is
 * checked first so that nothing is said of a file outside them. Returns the configuration with the
 * schema's defaults filled in (the others: model-config.ts `withModelDefaults`), and the issues (locs from
 * the configuration). Unknown keys are kept.
 */
export function checkModelConfiguration(dtype: ModelDtype, configuration: unknown, roots?: readonly string[]): ObjectCheck {
  const checked = checkObject(MODEL_CONFIGURATION_SCHEMAS[dtype], configuration);
  const path = checked.value.model_path;
  const pathChecked = !checked.issues.some((issue) => issue.loc[0] === 'model_path');
  if (dtype === 'llama_cpp' && pathChecked && typeof path === 'string') {
    const placed = roots ? placeInside(roots, path) : undefined;
    const problem = placed && 'problem' in placed ? placed.problem : modelPathProblem(path);
    if (problem) checked.issues.push({ loc: ['model_path'], msg: problem, type: 'value_error' });
  }
  return checked;
}

/** A relative path would depend on the folder knode happens to be started from. */
function modelPathProblem(path: string): string | null {
  if (!isAbsolute(path)) return 'Must be an absolute path to a .gguf file';
  const problem = ggufFileProblem(path);
  return problem ? `${path}: ${problem}` : null;
}
