import type { ModelTable } from '../db/schema.ts';
import { MODEL_CONFIGURATION_SCHEMAS, type ModelDtype } from '../llm/model-schemas.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type Configuration, maskSecrets, openSecrets, sealSecrets } from '../security/secret-config.ts';
import { checkObject } from '../util/json-schema.ts';

/**
 * A model's configuration as knode uses it, per dtype: checked, defaults filled in, secrets opened (the
 * API key in clear). Keys knode does not know are kept as given; a known optional key given as null stays
 * null (not set).
 */
export interface OpenAIConfiguration {
  readonly [key: string]: unknown;
  readonly model: string;
  /** Without a trailing slash. */
  readonly base_url: string;
  readonly api_key?: string | null;
  readonly timeout_ms: number;
  readonly system_prompt?: string | null;
  readonly cost_per_1k_prompt_tokens: number;
  readonly cost_per_1k_completion_tokens: number;
}

export interface LlamaCppConfiguration {
  readonly [key: string]: unknown;
  /** Absolute path of the .gguf file. */
  readonly model_path: string;
  readonly context_size?: number | null;
  /** The core count unless given. */
  readonly threads: number;
  readonly gpu_layers?: number | null;
  readonly system_prompt?: string | null;
  readonly cost_per_1k_prompt_tokens: number;
  readonly cost_per_1k_completion_tokens: number;
}

/** A model's dtype with the configuration of that dtype. */
export type ModelSettings =
  | { readonly dtype: 'openai'; readonly configuration: OpenAIConfiguration }
  | { readonly dtype: 'llama_cpp'; readonly configuration: LlamaCppConfiguration };

export type ModelConfiguration = ModelSettings['configuration'];

/** A model as the repository returns it. */
export type ModelRecord = {
  readonly id: string;
  readonly tenant_id: string;
  readonly name: string;
  readonly created_at: string;
  readonly updated_at: string;
} & ModelSettings;

/** The columns a model is read from: every one of them, named, so a new column is a choice and not a leak. */
export const MODEL_COLUMNS = [
  'id',
  'tenant_id',
  'name',
  'dtype',
  'configuration',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof ModelTable)[];

/** The configuration as responses show it: secrets (and URL user-info) masked. */
export function modelConfigurationView(configuration: ModelConfiguration): Configuration {
  return maskSecrets(configuration);
}

/**
 * Rows to records and back: the only place where a model's configuration is parsed and serialised and its
 * secrets sealed or opened.
 */
export class ModelCodec {
  constructor(private readonly box: SecretBox) {}

  toRecord(row: ModelTable): ModelRecord {
    // Only dtypes the API accepted were ever stored.
    const dtype = row.dtype as ModelDtype;
    const configuration = this.openConfiguration(dtype, row.configuration);
    const settings = { dtype, configuration } as ModelSettings;
    return { id: row.id, tenant_id: row.tenant_id, name: row.name, created_at: row.created_at, updated_at: row.updated_at, ...settings };
  }

  toRow(record: ModelRecord): ModelTable {
    return {
      id: record.id,
      tenant_id: record.tenant_id,
      name: record.name,
      dtype: record.dtype,
      configuration: this.sealConfiguration(record.configuration),
      created_at: record.created_at,
      updated_at: record.updated_at,
    };
  }

  sealConfiguration(configuration: ModelConfiguration): string {
    return JSON.stringify(sealSecrets(configuration, this.box));
  }

  /**
   * What was stored was checked when it was written (configuration.ts); the schema's defaults fill in
   * what a row written before a key had a default lacks. A row is never refused on read.
   */
  private openConfiguration(dtype: ModelDtype, text: string): ModelConfiguration {
    return checkObject(MODEL_CONFIGURATION_SCHEMAS[dtype], openSecrets(JSON.parse(text), this.box)).value as ModelConfiguration;
  }
}
