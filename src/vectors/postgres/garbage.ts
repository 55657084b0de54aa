import { GarbageCollector } from '../garbage-collector.ts';
import { lockIndex } from './chunk-sets.ts';
import { anyText, jsonRows, type PostgresConnection, type Query } from './connection.ts';
import { POSTINGS_LAYOUT, postgresTables } from './dataset-tables.ts';

/** Chunks deleted per transaction when garbage (a replaced or deleted file's chunks) is collected. */
const COLLECT_ROWS = 512;

/**
 * The PostgreSQL store's garbage collector: the shared loop (../garbage-collector.ts: one collection at a
 * time, calls made meanwhile share the next one; stopped, it leaves what is left for the next start) over
 * batches of COLLECT_ROWS hidden chunks, one short transaction each. Replicas collecting at once take turns
 * per dataset (its index row is locked first, as by every keyword write).
 */
export function postgresGarbageCollector(connection: PostgresConnection): GarbageCollector {
  return new GarbageCollector(() => connection.write((query) => collectBatch(query, COLLECT_ROWS)));
}

/**
 * Deletes up to `maxRows` chunks of one garbage set, and the set once it is empty; its vectors go first
 * (the last of them first), since a vector search looks past hidden vectors while keyword searches skip
 * hidden rows at no cost. A chunk's deletion takes its postings and its share of the terms' and the
 * index's counts with it. False when there is no garbage left.
 */
async function collectBatch(query: Query, maxRows: number): Promise<boolean> {
  // Datasets in a postings layout this knode does not read are left to the replicas that do (PostingsLayoutError).
  const [candidate] = await query<{ dataset_id: string }>(
    "SELECT s.dataset_id FROM vector_sets s JOIN vector_indexes i ON i.dataset_id = s.dataset_id WHERE s.state = 'garbage' AND i.postings_layout = $1 LIMIT 1",
    [POSTINGS_LAYOUT],
  );
  if (!candidate) return false;
  const tables = postgresTables(candidate.dataset_id);
  await lockIndex(query, tables);
  const [found] = await query<{ id: number; first_row: number; last_row: number; embedded: number }>(
    "SELECT id, first_row, last_row, embedded FROM vector_sets WHERE dataset_id = $1 AND state = 'garbage' ORDER BY id LIMIT 1 FOR UPDATE",
    [tables.datasetId],
  );
  if (!found) return true;
  const set = { id: Number(found.id), first: Number(found.first_row), last: Number(found.last_row), embedded: Number(found.embedded) };
  if (set.embedded > 0) {
    const from = set.first + Math.max(0, set.embedded - maxRows);
    await query(`DELETE FROM ${tables.embeddings} WHERE row_id BETWEEN $1 AND $2`, [from, set.first + set.embedded - 1]);
    await query('UPDATE vector_sets SET embedded = $1 WHERE id = $2', [from - set.first, set.id]);
    return true;
  }
  // Whole writes only (a block of postings holds a write's rows): up to the end of the last write begun
  // within the batch. The set's first row begins a write, and so does each batch's end plus one.
  const [write] = await query<{ last: number | null }>(
    `SELECT max(last_row) AS last FROM ${tables.postings} WHERE first_row BETWEEN $1 AND $2`,
    [set.first, Math.min(set.last, set.first + maxRows - 1)],
  );
  const to = Math.min(set.last, Math.max(set.first + maxRows - 1, Number(write?.last ?? 0)));
  const [removed] = await query<{ rows: number; tokens: number }>(
    `WITH gone AS (DELETE FROM ${tables.chunks} WHERE row_id BETWEEN $1 AND $2 RETURNING tokens) ` +
      'SELECT count(*) AS rows, coalesce(sum(tokens), 0) AS tokens FROM gone',
    [set.first, to],
  );
  // Each term loses the deleted chunks that held it; a term no chunk holds any more is deleted.
  const emptied = await query<{ term: string }>(
    `WITH gone AS (DELETE FROM ${tables.postings} WHERE first_row BETWEEN $1 AND $2 RETURNING term, cardinality(offsets) AS n), ` +
      'counted AS (SELECT term, sum(n) AS n FROM gone GROUP BY term), ' +
      `updated AS (UPDATE ${tables.terms} t SET chunks = t.chunks - counted.n FROM counted WHERE t.term = counted.term RETURNING t.term, t.chunks) ` +
      'SELECT term FROM updated WHERE chunks <= 0',
    [set.first, to],
  );
  if (emptied.length > 0) {
    await query(`DELETE FROM ${tables.terms} WHERE term ${anyText(1)} AND chunks <= 0`, [jsonRows(emptied.map((row) => row.term))]);
  }
  await query('UPDATE vector_indexes SET keyword_rows = keyword_rows - $1, keyword_tokens = keyword_tokens - $2 WHERE dataset_id = $3', [
    Number(removed?.rows ?? 0),
    Number(removed?.tokens ?? 0),
    tables.datasetId,
  ]);
  if (to >= set.last) await query('DELETE FROM vector_sets WHERE id = $1', [set.id]);
  else await query('UPDATE vector_sets SET first_row = $1 WHERE id = $2', [to + 1, set.id]);
  return true;
}
