import { type Ranked, rank, type SearchMode } from './ranking.ts';
import type { CandidateSet, SearchHit, SearchOptions } from './store.ts';
import { MAX_KNN } from './vector-search.ts';

/**
 * What a query's answer is made of, the same on both engines (sqlite-search.ts, postgres/search.ts): how
 * many candidates each list is asked for, the checks of the query's vector, the candidates assembled from
 * the keyword and vector lists, ranked (ranking.ts) and loaded as hits. The queries that fill the lists stay
 * with each engine: SQLite's run synchronously in one read of its connection, PostgreSQL's are awaited in
 * one read-only transaction.
 */

/**
 * Candidates per wanted result, from each list: the scores re-order them (and lower repeated files), so
 * more than `limit` must be looked at.
 */
const CANDIDATES_PER_RESULT = 4;

/** How many candidates each list gives for `limit` results (at most the vector index's k). */
export function candidatesWanted(limit: number): number {
  return Math.min(MAX_KNN, limit * CANDIDATES_PER_RESULT);
}

/** A search's `limit` as a whole number of results, refused below 1, and the candidates it wants. */
export function searchSize(options: SearchOptions): { limit: number; wanted: number } {
  const limit = Math.floor(options.limit);
  if (!(limit >= 1)) throw new Error(`search limit must be at least 1, got ${options.limit}`);
  return { limit, wanted: candidatesWanted(limit) };
}

/** Refuses a vector or hybrid search without the query's vector, and a vector of another dimension than the index's. */
export function checkQueryVector(mode: SearchMode, queryEmbedding: Float32Array | undefined, dimension: number): void {
  if (mode !== 'keyword' && queryEmbedding === undefined) throw new Error(`${mode} search needs the query's vector`);
  if (queryEmbedding && queryEmbedding.length !== dimension) {
    throw new Error(`query vector has ${queryEmbedding.length} dimensions, dataset index has ${dimension}`);
  }
}

/** The answer of an empty dataset. */
export function noCandidates(): CandidateSet {
  return { candidates: [], facts: { queryWeight: 0, chunkCount: 0 } };
}

/** What the engine's lists found for a query, by row id. */
export interface FoundLists {
  /** BM25 by row id, completed for the vector list's rows in hybrid mode. */
  readonly bm25: ReadonlyMap<number, number>;
  /** Cosine by row id, completed for the keyword list's rows in hybrid mode. */
  readonly cosines: ReadonlyMap<number, number>;
  /** The file of each row. */
  readonly files: ReadonlyMap<number, string>;
  /** The summed weight of the query words each keyword row holds. */
  readonly matched: ReadonlyMap<number, number>;
  /** The weights of the query's searched words; undefined without a keyword query. */
  readonly words: readonly { readonly weight: number }[] | undefined;
  readonly chunkCount: number;
}

/** The row ids of both lists, each once, keyword rows first. */
export function foundRows(bm25: ReadonlyMap<number, number>, cosines: ReadonlyMap<number, number>): number[] {
  return [...new Set([...bm25.keys(), ...cosines.keys()])];
}

/** Each row of both lists a candidate with its evidence, and the query's facts. */
export function assembleCandidates(found: FoundLists): CandidateSet {
  const candidates = foundRows(found.bm25, found.cosines).map((rowid) => ({
    rowid,
    fileKey: found.files.get(rowid) ?? '',
    ...(found.bm25.has(rowid) ? { bm25: found.bm25.get(rowid) as number, matched: found.matched.get(rowid) ?? 0 } : {}),
    ...(found.cosines.has(rowid) ? { cosine: found.cosines.get(rowid) as number } : {}),
  }));
  const queryWeight = found.words?.reduce((sum, word) => sum + word.weight, 0) ?? 0;
  return { candidates, facts: { queryWeight, chunkCount: found.chunkCount } };
}

/** The candidates without those of `leftOut`'s file, as if it were not in the dataset. */
export function leavingOut(found: CandidateSet, leftOut: string | undefined): CandidateSet {
  if (leftOut === undefined) return found;
  return { ...found, candidates: found.candidates.filter((candidate) => candidate.fileKey !== leftOut) };
}

/** The candidates scored with the mode's calibrated model, those below the threshold dropped, at most `limit`. */
export function ranked(found: CandidateSet, options: SearchOptions, limit: number): Ranked[] {
  return rank(found.candidates, found.facts, options.mode, options.calibration, options.similarityThreshold).slice(0, limit);
}

/** A chunk's row as a search loads it. */
export interface HitRow {
  readonly id: string;
  readonly content: string;
  readonly metadata: string;
}

/** The ranked rows as hits, in rank order; a row no longer there is left out. */
export function hitsOf(ranking: readonly Ranked[], rows: ReadonlyMap<number, HitRow>, includeMetadata: boolean): SearchHit[] {
  const hits: SearchHit[] = [];
  for (const { rowid, score } of ranking) {
    const row = rows.get(rowid);
    if (!row) continue;
    hits.push({
      document_id: row.id,
      content: row.content,
      similarity_score: score,
      metadata: includeMetadata ? (JSON.parse(row.metadata) as Record<string, unknown>) : {},
    });
  }
  return hits;
}
