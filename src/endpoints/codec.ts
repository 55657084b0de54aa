import type { Static } from 'typebox';
import type { EndpointTable } from '../db/schema.ts';
import type { GenerationDefaults as GenerationDefaultsSchema } from './schemas.ts';

export type GenerationDefaults = Static<typeof GenerationDefaultsSchema>;

/**
 * An endpoint as the repository returns it: the row, with `published` a real boolean and its generation defaults
 * parsed. `archived_at` is there only when the endpoint is archived (absent and null both mean it is not).
 */
export type EndpointRecord = Omit<EndpointTable, 'published' | 'generation_defaults' | 'archived_at'> & {
  published: boolean;
  generation_defaults: GenerationDefaults;
  archived_at?: string | null;
};

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
  'generation_defaults',
  'created_at',
  'updated_at',
  'archived_at',
] as const satisfies readonly (keyof EndpointTable)[];

/**
 * Rows to records and back: SQLite keeps booleans as 0 and 1, the generation defaults as JSON (checked when
 * written), and a null `archived_at` is left out of the record.
 */
export const endpointCodec = {
  toRecord(row: EndpointTable): EndpointRecord {
    const { archived_at, ...columns } = row;
    return {
      ...columns,
      published: row.published === 1,
      generation_defaults: JSON.parse(row.generation_defaults) as GenerationDefaults,
      ...(archived_at ? { archived_at } : {}),
    };
  },

  toRow(record: EndpointRecord): EndpointTable {
    return {
      ...record,
      published: record.published ? 1 : 0,
      generation_defaults: JSON.stringify(record.generation_defaults),
      archived_at: record.archived_at ?? null,
    };
  },
};
