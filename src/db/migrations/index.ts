import type { Migration } from 'kysely';
import * as initial from './0001-initial.ts';
import * as vectors from './0002-vectors.ts';
import * as queryUsage from './0003-query-usage.ts';
import * as tunnelToken from './0004-tunnel-token.ts';
import * as security from './0005-security.ts';
import * as keywordLayout from './0006-keyword-layout.ts';
import * as generationDefaults from './0007-generation-defaults.ts';
import * as twoPhaseIndexing from './0008-two-phase-indexing.ts';
import * as payments from './0009-payments.ts';
import * as usageAnalytics from './0010-usage-analytics.ts';
import * as publicUrlSource from './0011-public-url-source.ts';
import * as settlementJournal from './0012-settlement-journal.ts';
import * as satellites from './0013-satellites.ts';
import * as datasetCalibrations from './0014-dataset-calibrations.ts';
import * as insertionOrderAndNameKeys from './0015-insertion-order-and-name-keys.ts';
import * as queryTerms from './0016-query-terms.ts';
import * as piiFilterPolicy from './0017-pii-filter-policy.ts';
import * as endpointArchive from './0018-endpoint-archive.ts';
import * as feeds from './0019-feeds.ts';
import * as settlementReplica from './0020-settlement-replica.ts';
import * as datasetSelections from './0021-dataset-selections.ts';
import * as tunnelStates from './0022-tunnel-states.ts';
import * as laterPieces from './0023-later-pieces.ts';
import * as vectorLayout from './0024-vector-layout.ts';

/**
 * Every migration, in order. They are imported (not read from disk) so the compiled binary carries them.
 * Names sort in the order they must run.
 */
export const migrations: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-vectors': vectors,
  '0003-query-usage': queryUsage,
  '0004-tunnel-token': tunnelToken,
  '0005-security': security,
  '0006-keyword-layout': keywordLayout,
  '0007-generation-defaults': generationDefaults,
  '0008-two-phase-indexing': twoPhaseIndexing,
  '0009-payments': payments,
  '0010-usage-analytics': usageAnalytics,
  '0011-public-url-source': publicUrlSource,
  '0012-settlement-journal': settlementJournal,
  '0013-satellites': satellites,
  '0014-dataset-calibrations': datasetCalibrations,
  '0015-insertion-order-and-name-keys': insertionOrderAndNameKeys,
  '0016-query-terms': queryTerms,
  '0017-pii-filter-policy': piiFilterPolicy,
  '0018-endpoint-archive': endpointArchive,
  '0019-feeds': feeds,
  '0020-settlement-replica': settlementReplica,
  '0021-dataset-selections': datasetSelections,
  '0022-tunnel-states': tunnelStates,
  '0023-later-pieces': laterPieces,
  '0024-vector-layout': vectorLayout,
};
