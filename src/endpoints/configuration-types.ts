import { DATASET_CONFIGURATION_SCHEMAS } from '../datasets/configuration-schema.ts';
import { MODEL_CONFIGURATION_SCHEMAS } from '../models/configuration.ts';
import { POLICY_CONFIGURATION_SCHEMAS } from '../policies/configuration-schema.ts';

/**
 * Every configuration type an endpoint is built from, per kind, with the JSON Schema its configuration is
 * checked against (through util/json-schema.ts, the mapping the routes use): what a type discovery route
 * (`GET /api/v1/types`) serves as it is, so a console can build its forms from the rules the API applies.
 * Here because endpoints/ is the lowest module that sees datasets, models and policies. In every schema a
 * key given as null counts as not given; unknown keys are kept for datasets and models, dropped for policies.
 */
export const CONFIGURATION_TYPES = {
  dataset: DATASET_CONFIGURATION_SCHEMAS,
  model: MODEL_CONFIGURATION_SCHEMAS,
  policy: POLICY_CONFIGURATION_SCHEMAS,
} as const;

export type ConfigurationKind = keyof typeof CONFIGURATION_TYPES;
