import { type Calibration, type Evidence, probability } from './calibration.ts';

export type SearchMode = 'vector' | 'keyword' | 'hybrid';

/** How chunks are ranked, as the dataset view and each answer's `provider_info` name it. */
export const RANKING =
  "knode ranking 4: BM25 over text, title, file name and the document's lead (stop words dropped) and cosine, with how much of the question the chunk and the best chunk hold, combined by a calibrated logistic model; repeated files discounted";

/** What one candidate chunk brings to a query, before it is scored. */
export interface Candidate {
  readonly rowid: number;
  /** The file the chunk comes from: chunks of one file compete for the same places. */
  readonly fileKey: string;
  /** BM25 (higher is better), undefined when no query word matches the chunk. */
  readonly bm25?: number;
  /** The summed weight of the query words the chunk holds (keyword-search.ts), undefined without keyword evidence. */
  readonly matched?: number;
  /** Cosine similarity, undefined when the query was not embedded (keyword mode) or the chunk has no vector. */
  readonly cosine?: number;
}

export interface Ranked {
  readonly rowid: number;
  /** The calibrated relevance, what the API calls `similarity_score`. */
  readonly score: number;
}

/**
 * Each further chunk of a file already ranked above counts this much less (0.6, then 0.36...): five
 * chunks of one file should not crowd the other files out of the first places. On the evaluation set it
 * lifted recall@5 by about 0.01 in every mode.
 */
const REPEAT_DISCOUNT = 0.6;

/** Query-level facts the evidence of each candidate is measured against. */
export interface QueryFacts {
  /** The summed weight of all the query's searched words (keyword-search.ts); 0 without a keyword query. */
  readonly queryWeight: number;
  /** Chunks in the dataset. */
  readonly chunkCount: number;
}

/** The evidence of every candidate, relative to the best candidate of the query. */
export function evidenceOf(candidates: readonly Candidate[], facts: QueryFacts): Evidence[] {
  const bestBm25 = Math.max(0, ...candidates.map((candidate) => candidate.bm25 ?? 0));
  const bestCosine = Math.max(-1, ...candidates.map((candidate) => candidate.cosine ?? -1));
  // The weight of a word only one chunk holds: the unit in which `strength` counts rare words.
  const rareWord = Math.log(1 + Math.max(1, facts.chunkCount));
  const heldOf = (candidate: Candidate) => (facts.queryWeight > 0 ? Math.min(1, (candidate.matched ?? 0) / facts.queryWeight) : 0);
  const bestHeld = Math.max(0, ...candidates.map(heldOf));
  return candidates.map((candidate) => {
    const bm25 = candidate.bm25 ?? 0;
    const matched = candidate.matched ?? 0;
    const cosine = candidate.cosine ?? 0;
    return {
      bm25,
      strength: Math.max(bm25, matched) / rareWord,
      relative: bestBm25 > 0 ? bm25 / bestBm25 : 0,
      coverage: facts.queryWeight > 0 ? Math.min(3, Math.max(bm25, matched) / facts.queryWeight) : 0,
      held: heldOf(candidate),
      bestHeld,
      cosine,
      cosineGap: candidate.cosine === undefined ? 0 : cosine - bestCosine,
    };
  });
}

/**
 * Scores every candidate with the mode's model, lowers repeated files, keeps those at or above the
 * threshold, best first. A chunk without a vector in hybrid mode is scored on its keyword evidence.
 */
export function rank(
  candidates: readonly Candidate[],
  facts: QueryFacts,
  mode: SearchMode,
  calibration: Calibration,
  threshold: number,
): Ranked[] {
  const evidence = evidenceOf(candidates, facts);
  const scored = candidates.map((candidate, index) => {
    const model = mode === 'hybrid' && candidate.cosine === undefined ? calibration.keyword : calibration[mode];
    return { candidate, score: probability(model, evidence[index] as Evidence) };
  });
  scored.sort((a, b) => b.score - a.score || a.candidate.rowid - b.candidate.rowid);
  const seen = new Map<string, number>();
  const discounted = scored.map(({ candidate, score }) => {
    const repeats = seen.get(candidate.fileKey) ?? 0;
    seen.set(candidate.fileKey, repeats + 1);
    return { rowid: candidate.rowid, score: score * REPEAT_DISCOUNT ** repeats };
  });
  discounted.sort((a, b) => b.score - a.score || a.rowid - b.rowid);
  return discounted.filter((ranked) => ranked.score >= threshold);
}
