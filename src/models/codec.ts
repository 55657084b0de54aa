import type { ModelTable } from '../db/schema.ts';
import { type ModelConfiguration, type ModelSettings, modelSettings } from '../llm/model-config.ts';
import type { ModelDtype } from '../llm/model-schemas.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type Configuration, maskSecrets, openSecrets, sealSecrets } from '../security/secret-config.ts';

/** A model's configuration is one type per dtype, defined with its defaults in llm/model-config.ts. */
export type { ModelConfiguration, ModelSettings } from '../llm/model-config.ts';

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
    const settings = this.openSettings(row.dtype as ModelDtype, row.configuration);
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
   * What was stored was checked when it was written (configuration.ts); the defaults fill in what a row
   * written before a key had a default lacks. A row is never refused on read.
   */
  private openSettings(dtype: ModelDtype, text: string): ModelSettings {
    return modelSettings(dtype, openSecrets(JSON.parse(text), this.box));
  }
}
