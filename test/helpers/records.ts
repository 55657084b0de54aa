/**
 * Rows written straight through the repositories or the database, for tests that seed one without the API (the
 * two engines compared, a repository's own behaviour): a stopped local_file dataset, a raw endpoint serving it,
 * and an active, default marketplace account on one hub, complete and valid, each with its own new id. `fields`
 * changes what a test cares about.
 */
import type { DatasetConfiguration, DatasetRecord } from '../../src/datasets/codec.ts';
import type { MarketplaceTable } from '../../src/db/schema.ts';
import type { EndpointRecord } from '../../src/endpoints/codec.ts';

/** A stopped `local_file` dataset named `name` (its collection too); `fields.configuration` is laid over the default one. */
export function datasetRecord(
  tenantId: string,
  name: string,
  createdAt = new Date().toISOString(),
  fields: Omit<Partial<DatasetRecord>, 'configuration'> & { configuration?: Partial<DatasetConfiguration> } = {},
): DatasetRecord {
  const { configuration, ...rest } = fields;
  return {
    id: crypto.randomUUID(),
    tenant_id: tenantId,
    name,
    summary: '',
    dtype: 'local_file',
    status: 'stopped',
    error: null,
    created_at: createdAt,
    updated_at: createdAt,
    ...rest,
    configuration: {
      ingestionPath: '/srv/docs',
      collectionName: name,
      embedder: 'use-lite',
      chunkSize: 800,
      chunkOverlap: 100,
      fileTypes: ['md'],
      cost_per_query: 0,
      ...configuration,
    },
  };
}

/** An unpublished endpoint `slug` (its name too) answering with `datasetId`'s raw passages. */
export function endpointRecord(
  tenantId: string,
  slug: string,
  datasetId: string,
  createdAt = new Date().toISOString(),
  fields: Partial<EndpointRecord> = {},
): EndpointRecord {
  return {
    id: crypto.randomUUID(),
    tenant_id: tenantId,
    name: slug,
    slug,
    description: '',
    summary: '',
    dataset_id: datasetId,
    model_id: null,
    response_type: 'raw',
    published: false,
    tags: '',
    generation_defaults: {},
    created_at: createdAt,
    updated_at: createdAt,
    ...fields,
  };
}

/** The tenant's default, active account `username` on https://hub.example.org (password sealed elsewhere: a placeholder). */
export function marketplaceRow(tenantId: string, username: string, createdAt = new Date().toISOString()): MarketplaceTable {
  return {
    id: crypto.randomUUID(),
    tenant_id: tenantId,
    name: 'hub',
    url: 'https://hub.example.org',
    username,
    email: null,
    password: 'sealed',
    is_default: 1,
    is_active: 1,
    accounting_url: null,
    accounting_email: null,
    accounting_password: null,
    account: `https://hub.example.org ${username}`,
    satellite_id: null,
    satellite_url: null,
    created_at: createdAt,
    updated_at: createdAt,
  };
}
