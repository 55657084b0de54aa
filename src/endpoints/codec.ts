import type { EndpointTable } from '../db/schema.ts';

/** An endpoint as the repository returns it: the row, with `published` a real boolean. */
export type EndpointRecord = Omit<EndpointTable, 'published'> & { published: boolean };

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
