import { checkModelConfiguration, MODEL_DTYPES, type ModelDtype } from '../../src/llm/registry.ts';

/** One problem with one configuration key (`field`, dotted when deeper; "" for the whole configuration). */
export interface ConfigurationIssue {
  field: string;
  msg: string;
  type: string;
}

/**
 * The problems of a model configuration (empty when valid), as checkModelConfiguration finds them, worded
 * with a field name for the provider tests' tables. The API words them as `{loc, msg, type}` (util/json-schema.ts).
 */
export function validateModelConfiguration(dtype: ModelDtype, configuration: unknown): ConfigurationIssue[] {
  if (!(MODEL_DTYPES as readonly string[]).includes(dtype)) {
    return [{ field: 'dtype', msg: `Unknown model dtype (expected one of: ${MODEL_DTYPES.join(', ')})`, type: 'enum' }];
  }
  return checkModelConfiguration(dtype, configuration).issues.map(({ loc, msg, type }) => ({ field: loc.join('.'), msg, type }));
}
