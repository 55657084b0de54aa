import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { checkConfiguration, type Issues } from '../http/issues.ts';
import { isSupportedExtension, SUPPORTED_EXTENSIONS } from '../ingestion/parsers/file-types.ts';
import type { Configuration } from '../security/secret-config.ts';
import { placeInside } from '../util/paths.ts';
import type { DatasetConfiguration } from './codec.ts';
import { type CheckedLocalFileConfiguration, DATASET_CONFIGURATION_SCHEMAS, type DatasetDtype } from './configuration-schema.ts';
import { normalizeRssConfiguration } from './feed-configuration.ts';

export interface DatasetRules {
  /** The real paths of the folders the dataset's tenant may index (tenants/ingestion-roots.ts). */
  ingestionRoots: readonly string[];
  defaultEmbedder: string;
}

function collectionNameFrom(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
  return cleaned === '' ? 'collection' : cleaned.slice(0, 64);
}

/**
 * Checks a dataset configuration against its dtype's schema (configuration-schema.ts), then what no schema
 * can say, and returns it with every default filled in, so what is stored says exactly how the dataset
 * behaves (422 with every problem otherwise). Unknown keys are kept as given.
 */
export function normalizeDatasetConfiguration(
  dtype: DatasetDtype,
  input: Configuration,
  datasetName: string,
  rules: DatasetRules,
): DatasetConfiguration {
  if (dtype === 'rss') {
    const checkEmbedder = (issues: Issues, embedder: string) => checkEmbedderFolder(issues, embedder, rules);
    return normalizeRssConfiguration(input, collectionNameFrom(datasetName), rules.defaultEmbedder, checkEmbedder);
  }
  const checked = checkConfiguration(input, DATASET_CONFIGURATION_SCHEMAS[dtype]);
  const { issues } = checked;
  // Each key is read below only where the schema found nothing wrong with it.
  const value = checked.value as CheckedLocalFileConfiguration;
  const ingestionPath = issues.has('ingestionPath') ? undefined : checkIngestionPath(issues, value.ingestionPath, rules);
  const { chunkSize, chunkOverlap, fileTypes } = value;
  if (!issues.has('chunkSize') && !issues.has('chunkOverlap') && chunkOverlap >= chunkSize) {
    issues.add('chunkOverlap', 'Must be smaller than chunkSize', 'less_than');
  }
  const types = issues.has('fileTypes') ? [] : checkFileTypes(issues, fileTypes);
  if (value.embedder !== undefined && !issues.has('embedder')) checkEmbedderFolder(issues, value.embedder, rules);
  issues.throwIfAny();
  // Keys in the order they always had: as given, then the ones filled in.
  return {
    ...input,
    ingestionPath: ingestionPath as string,
    collectionName: value.collectionName ?? collectionNameFrom(datasetName),
    embedder: value.embedder ?? rules.defaultEmbedder,
    chunkSize,
    chunkOverlap,
    fileTypes: types,
    cost_per_query: value.cost_per_query,
  };
}

/**
 * The folder must lie inside the tenant's roots once symbolic links are followed, and exist (util/paths.ts
 * `placeInside`: a path outside the roots is refused without telling whether it exists).
 */
function checkIngestionPath(issues: Issues, path: string, { ingestionRoots: roots }: DatasetRules): string | undefined {
  const placed = placeInside(roots, path);
  if ('problem' in placed) {
    issues.add('ingestionPath', placed.problem, 'value_error');
    return undefined;
  }
  const resolved = placed.real;
  if (!statSync(resolved).isDirectory()) {
    issues.add('ingestionPath', `'${path}' is not a folder`, 'value_error');
    return undefined;
  }
  return resolved;
}

/**
 * A `transformers:` embedder given as a folder (`transformers:/models/bge-small`) is read from disk like
 * the dataset's files, so it must lie inside the tenant's folders too; a model named without a path
 * (`transformers:Xenova/all-MiniLM-L6-v2`) comes from knode's own models folder.
 */
function checkEmbedderFolder(issues: Issues, embedder: string, { ingestionRoots: roots }: DatasetRules): void {
  if (!embedder.startsWith('transformers:')) return;
  const model = embedder.slice('transformers:'.length);
  if (!isAbsolute(model) && !model.startsWith('.')) return;
  const placed = placeInside(roots, model);
  if ('problem' in placed) issues.add('embedder', `The model folder: ${placed.problem}`, 'value_error');
}

/**
 * `"md, .TXT,pdf"` or `["md", "txt"]`: a list of file types the parsers know (ingestion/parsers/file-types.ts),
 * kept lower case, without dots or repeats.
 */
function checkFileTypes(issues: Issues, value: string | readonly string[]): string[] {
  const list = typeof value === 'string' ? value.split(',') : value;
  const types = [...new Set(list.map((item) => item.trim().toLowerCase().replace(/^\./, '')).filter((type) => type !== ''))];
  const unknown = types.filter((type) => !isSupportedExtension(type));
  if (types.length === 0 || unknown.length > 0) {
    const named = unknown.length > 0 ? `Unsupported file type(s): ${unknown.join(', ')}. ` : 'No file type given. ';
    issues.add('fileTypes', `${named}Supported: ${SUPPORTED_EXTENSIONS.join(', ')}`, 'enum');
    return [];
  }
  return types;
}
