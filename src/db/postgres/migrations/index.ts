import type { Migration } from 'kysely';
import * as controlTables from './0001-control-tables.ts';
import * as queryTerms from './0002-query-terms.ts';
import * as coordination from './0003-coordination.ts';
import * as piiFilterPolicy from './0004-pii-filter-policy.ts';
import * as endpointArchive from './0005-endpoint-archive.ts';
import * as feeds from './0006-feeds.ts';
import * as settlementReplica from './0007-settlement-replica.ts';
import * as datasetSelections from './0008-dataset-selections.ts';
import * as embeddingWindows from './0009-embedding-windows.ts';
import * as tunnelStates from './0010-tunnel-states.ts';

/**
 * PostgreSQL's migrations, in order (cluster mode). They are not SQLite's translated one by one: a new
 * database starts from today's schema (0001), and each later SQLite migration that changes a control table
 * gets its PostgreSQL counterpart here (test/postgres-schema.test.ts fails until it has one). Imported,
 * not read from disk, so the compiled binary carries them.
 */
export const postgresMigrations: Record<string, Migration> = {
  '0001-control-tables': controlTables,
  '0002-query-terms': queryTerms,
  '0003-coordination': coordination,
  '0004-pii-filter-policy': piiFilterPolicy,
  '0005-endpoint-archive': endpointArchive,
  '0006-feeds': feeds,
  '0007-settlement-replica': settlementReplica,
  '0008-dataset-selections': datasetSelections,
  '0009-embedding-windows': embeddingWindows,
  '0010-tunnel-states': tunnelStates,
};
