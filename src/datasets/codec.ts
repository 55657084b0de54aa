import type { DatasetTable } from '../db/schema.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type Configuration, maskSecrets, openSecrets, sealSecrets } from '../security/secret-config.ts';
import { checkObject } from '../util/json-schema.ts';
import { DATASET_CONFIGURATION_SCHEMAS, type DatasetDtype } from './configuration-schema.ts';

export type DatasetStatus = 'starting' | 'running' | 'stopped' | 'error';

/**
 * A dataset's configuration as knode uses it: checked, defaults filled in, secrets opened (an `openai:`
 * embedder's key in clear). Keys knode does not know are kept as given; a known optional key given as
 * null stays null (not set).
 */
export interface DatasetConfiguration {
  readonly [key: string]: unknown;
  /** The real path of the folder (symbolic links resolved when the dataset was created). */
  readonly ingestionPath: string;
  readonly collectionName: string;
  /** `use-lite`, `transformers:<model>` or `openai:<model>`. */
  readonly embedder: string;
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  /** Lower-case extensions without their dot; stored and shown as one comma-separated string. */
  readonly fileTypes: readonly string[];
  readonly cost_per_query: number;
  readonly httpPort?: number | null;
  readonly grpcPort?: number | null;
  readonly base_url?: string | null;
  readonly api_key?: string | null;
}

/** A dataset as the repository returns it. */
export interface DatasetRecord {
  id: string;
  tenant_id: string;
  name: string;
  summary: string;
  dtype: DatasetDtype;
  configuration: DatasetConfiguration;
  status: DatasetStatus;
  /** Why the dataset is in `error` (e.g. its folder now resolves outside the tenant's roots); null otherwise. */
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** The columns a dataset is read from: every one of them, named, so a new column is a choice and not a leak. */
export const DATASET_COLUMNS = [
  'id',
  'tenant_id',
  'name',
  'summary',
  'dtype',
  'configuration',
  'status',
  'error',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof DatasetTable)[];

/** The configuration as stored and shown: `fileTypes` (a folder's) as one comma-separated string. */
function wireConfiguration(configuration: DatasetConfiguration): Configuration {
  // An `rss` dataset has no folder, hence no fileTypes (its feeds and interval instead).
  if (!Array.isArray(configuration.fileTypes)) return { ...configuration };
  return { ...configuration, fileTypes: configuration.fileTypes.join(',') };
}

/** The configuration as responses show it: secrets (and URL user-info) masked. */
export function datasetConfigurationView(configuration: DatasetConfiguration): Configuration {
  return maskSecrets(wireConfiguration(configuration));
}

/**
 * Rows to records and back: the only place where a dataset's configuration is parsed and serialised and
 * its secrets sealed or opened.
 */
export class DatasetCodec {
  constructor(private readonly box: SecretBox) {}

  toRecord(row: DatasetTable): DatasetRecord {
    return {
      ...row,
      // Only dtypes the API accepted were ever stored.
      dtype: row.dtype as DatasetDtype,
      status: row.status as DatasetStatus,
      configuration: this.openConfiguration(row.configuration, row.dtype as DatasetDtype),
    };
  }

  toRow(record: DatasetRecord): DatasetTable {
    return { ...record, configuration: this.sealConfiguration(record.configuration) };
  }

  sealConfiguration(configuration: DatasetConfiguration): string {
    return JSON.stringify(sealSecrets(wireConfiguration(configuration), this.box));
  }

  /**
   * What was stored was checked when it was written (configuration.ts); the schema's defaults fill in
   * what a row written before a key had a default lacks. A row is never refused on read.
   */
  private openConfiguration(text: string, dtype: DatasetDtype): DatasetConfiguration {
    const schema = DATASET_CONFIGURATION_SCHEMAS[dtype] ?? DATASET_CONFIGURATION_SCHEMAS.local_file;
    const { value } = checkObject(schema, openSecrets(JSON.parse(text), this.box));
    if (dtype === 'rss') return value as unknown as DatasetConfiguration;
    const configuration: Configuration = { ...value, fileTypes: typeof value.fileTypes === 'string' ? value.fileTypes.split(',') : [] };
    return configuration as DatasetConfiguration;
  }
}
