import type { EndpointTable } from '../db/schema.ts';

/** An endpoint as the repository returns it: `published` a real boolean. */
export interface EndpointRecord {
  id: string;
  tenant_id: string;
  name: string;
  /** Lower case; unique in the tenant. */
  slug: string;
  description: string;
  summary: string;
  dataset_id: string | null;
  model_id: string | null;
  response_type: 'raw' | 'summary' | 'both';
  published: boolean;
  /** Comma-separated, trimmed, without empty tags. */
  tags: string;
  created_at: string;
  updated_at: string;
}

/** The columns an endpoint is read from: every one of them, named, so a new column is a choice and not a leak. */
export const ENDPOINT_COLUMNS = [
  'id',
  'tenant_id',
  'name',
  'slug',
  'description',
  'summary',
  'dataset_id',
  'model_id',
  'response_type',
  'published',
  'tags',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof EndpointTable)[];

/** Rows to records and back: SQLite keeps booleans as 0 and 1. */
export const endpointCodec = {
  toRecord(row: EndpointTable): EndpointRecord {
    return { ...row, published: row.published === 1 };
  },

  toRow(record: EndpointRecord): EndpointTable {
    return { ...record, published: record.published ? 1 : 0 };
  },
};
