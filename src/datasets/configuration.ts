import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { checkConfiguration, type Issues } from '../http/issues.ts';
import { isSupportedExtension, SUPPORTED_EXTENSIONS } from '../ingestion/parsers/file-types.ts';
import type { Configuration } from '../security/secret-config.ts';
import { isInsideAny, realPath } from '../util/paths.ts';
import type { DatasetConfiguration } from './codec.ts';
import { type CheckedLocalFileConfiguration, DATASET_CONFIGURATION_SCHEMAS, type DatasetDtype } from './configuration-schema.ts';

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

/** The folder must exist and lie inside the tenant's roots once symbolic links are followed. */
function checkIngestionPath(issues: Issues, path: string, { ingestionRoots: roots }: DatasetRules): string | undefined {
  if (!isAbsolute(path)) {
    issues.add('ingestionPath', 'Must be an absolute path', 'value_error');
    return undefined;
  }
  const resolved = realPath(path); // follows symlinks, so a link cannot lead outside the roots
  if (resolved === undefined) {
    issues.add('ingestionPath', `Folder '${path}' does not exist`, 'value_error');
    return undefined;
  }
  if (roots.length === 0) {
    issues.add(
      'ingestionPath',
      'This tenant may not index any folder yet: the operator grants folders with PATCH /api/v1/tenants/{name}',
      'value_error',
    );
    return undefined;
  }
  if (!isInsideAny(roots, resolved)) {
    issues.add('ingestionPath', `Must be inside one of this tenant's ingestion roots: ${roots.join(', ')}`, 'value_error');
    return undefined;
  }
  if (!statSync(resolved).isDirectory()) {
    issues.add('ingestionPath', `'${path}' is not a folder`, 'value_error');
    return undefined;
  }
  return resolved;
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
