import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { EMBEDDER_PATTERN } from '../config.ts';
import {
  enforceConfigurationLimits,
  Issues,
  optionalInteger,
  optionalNumber,
  optionalString,
  rejectMaskedSecrets,
} from '../http/issues.ts';
import type { Configuration } from '../security/secret-config.ts';
import { isInsideAny, realPath } from '../util/paths.ts';
import { isHttpUrl } from '../util/url.ts';

export const DATASET_DTYPES = ['local_file'] as const;
export const SUPPORTED_FILE_TYPES = ['pdf', 'txt', 'md', 'docx', 'html', 'htm'] as const;

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
 * Checks a `local_file` configuration (the only dtype; the route schema refuses others) (API-CONTRACT 4)
 * and returns it with every default filled in, so what is stored says exactly how the dataset behaves.
 * Unknown keys are kept as given.
 */
export function normalizeDatasetConfiguration(input: Configuration, datasetName: string, rules: DatasetRules): Configuration {
  enforceConfigurationLimits(input);
  const issues = new Issues(['body', 'configuration']);
  rejectMaskedSecrets(issues, input);
  const ingestionPath = checkIngestionPath(issues, input.ingestionPath, rules.ingestionRoots);
  const chunkSize = optionalInteger(issues, input, 'chunkSize', { min: 100, max: 100_000, fallback: 1000 }) ?? 1000;
  const chunkOverlap = optionalInteger(issues, input, 'chunkOverlap', { min: 0, max: 50_000, fallback: 100 }) ?? 100;
  if (chunkOverlap >= chunkSize) issues.add('chunkOverlap', 'Must be smaller than chunkSize', 'less_than');
  const embedder = optionalString(issues, input, 'embedder', {
    maxLength: 500,
    pattern: EMBEDDER_PATTERN,
    fallback: rules.defaultEmbedder,
  });
  const baseUrl = optionalString(issues, input, 'base_url', { maxLength: 2000 });
  if (baseUrl !== undefined && !isHttpUrl(baseUrl)) issues.add('base_url', 'Input should be an http or https URL', 'url_parsing');
  optionalString(issues, input, 'api_key', { maxLength: 2000 });
  const normalized: Configuration = {
    ...input,
    ingestionPath,
    collectionName: optionalString(issues, input, 'collectionName', {
      maxLength: 64,
      pattern: /^[A-Za-z0-9_]+$/,
      fallback: collectionNameFrom(datasetName),
    }),
    embedder,
    chunkSize,
    chunkOverlap,
    fileTypes: checkFileTypes(issues, input.fileTypes),
    cost_per_query: optionalNumber(issues, input, 'cost_per_query', { min: 0, max: 1_000_000, fallback: 0 }),
  };
  for (const port of ['httpPort', 'grpcPort']) {
    const value = optionalInteger(issues, input, port, { min: 1, max: 65535 });
    if (value !== undefined) normalized[port] = value;
  }
  issues.throwIfAny();
  return normalized;
}

function checkIngestionPath(issues: Issues, value: unknown, roots: readonly string[]): string | undefined {
  if (value === undefined || value === null) {
    issues.add('ingestionPath', 'Field required', 'missing');
    return undefined;
  }
  if (typeof value !== 'string' || value.length > 4096) {
    issues.add('ingestionPath', 'Input should be a valid path', 'string_type');
    return undefined;
  }
  if (!isAbsolute(value)) {
    issues.add('ingestionPath', 'Must be an absolute path', 'value_error');
    return undefined;
  }
  const resolved = realPath(value); // follows symlinks, so a link cannot lead outside the roots
  if (resolved === undefined) {
    issues.add('ingestionPath', `Folder '${value}' does not exist`, 'value_error');
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
    issues.add('ingestionPath', `'${value}' is not a folder`, 'value_error');
    return undefined;
  }
  return resolved;
}

function checkFileTypes(issues: Issues, value: unknown): string {
  const fallback = SUPPORTED_FILE_TYPES.join(',');
  if (value === undefined || value === null) return fallback;
  const list = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : undefined;
  if (!list || list.some((item) => typeof item !== 'string')) {
    issues.add('fileTypes', 'Input should be a comma-separated string of file types', 'string_type');
    return fallback;
  }
  const types = [...new Set(list.map((item: string) => item.trim().toLowerCase().replace(/^\./, '')).filter((t) => t !== ''))];
  const unknown = types.filter((type) => !(SUPPORTED_FILE_TYPES as readonly string[]).includes(type));
  if (unknown.length > 0 || types.length === 0) {
    issues.add('fileTypes', `Supported file types: ${fallback}`, 'enum');
    return fallback;
  }
  return types.join(',');
}
