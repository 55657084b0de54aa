import { join } from 'node:path';
import { openDatabase } from '../../../src/db/database.ts';
import { UseLiteEmbedder } from '../../../src/embeddings/use-lite.ts';
import type { Calibration } from '../../../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../../../src/vectors/extension.ts';
import { type Candidate, type QueryFacts, rank, type SearchMode } from '../../../src/vectors/ranking.ts';
import { SqliteVectorStore } from '../../../src/vectors/sqlite-store.ts';
import { buildDescribedSet, DESCRIBED_CACHE } from './build.ts';

/**
 * The described set as `run.ts` indexed it (its cached knode database), for the scripts that tune on it
 * straight from the store: the questions (unanswerable ones with `relevant: null`) and, per mode asked for,
 * each question's candidates and facts as the store gives them (10 asked, the ranking left to the caller).
 */
export async function openIndexedSet<M extends SearchMode>(modes: readonly M[]) {
  // The committed set as this machine builds it (its fingerprint names run.ts's index; it covers the texts, which may have changed).
  const set = await buildDescribedSet('described');
  const database = await openDatabase(join(DESCRIBED_CACHE, `index-described-${set.fingerprint}-use-lite`), [vectorExtensionPath()]);
  const store = new SqliteVectorStore(database);
  const datasetId = await database.exclusive(
    (sqlite) => (sqlite.query('SELECT dataset_id FROM vector_indexes').get() as { dataset_id: string }).dataset_id,
  );
  const embedder = new UseLiteEmbedder({});
  const questions = [...set.answerable, ...set.unanswerable.map((question) => ({ ...question, relevant: null }))];
  const vectors = await embedder.embed(questions.map((question) => question.question));
  const observed = new Map<M, { candidates: Candidate[]; facts: QueryFacts }[]>();
  for (const mode of modes) {
    const rows = [];
    for (const [index, question] of questions.entries()) {
      rows.push(await store.candidates(datasetId, mode === 'keyword' ? undefined : vectors[index], question.question, mode, 10));
    }
    observed.set(mode, rows);
  }
  return {
    store,
    datasetId,
    embedder,
    questions,
    observed,
    close: async () => {
      await database.close();
      await embedder.close?.();
    },
  };
}

/**
 * Recall@5 of the answerable questions of `split`, and the share of its unanswerable ones left empty, when the
 * candidates `rows` (one per question, as `openIndexedSet` gives them) are ranked with `calibration` at `threshold`.
 */
export function rejectionFigures(
  questions: readonly { split: string; relevant: string | null }[],
  rows: readonly { candidates: Candidate[]; facts: QueryFacts }[],
  mode: SearchMode,
  calibration: Calibration,
  split: string,
  threshold: number,
): { recall: number; empty: number } {
  let found = 0;
  let answerable = 0;
  let empty = 0;
  let unanswerable = 0;
  for (const [index, question] of questions.entries()) {
    if (question.split !== split) continue;
    const { candidates, facts } = rows[index] as { candidates: Candidate[]; facts: QueryFacts };
    const ranked = rank(candidates, facts, mode, calibration, threshold).slice(0, 10);
    if (question.relevant === null) {
      unanswerable++;
      if (ranked.length === 0) empty++;
      continue;
    }
    answerable++;
    const files = ranked.map((entry) => candidates.find((candidate) => candidate.rowid === entry.rowid)?.fileKey);
    const position = files.indexOf(question.relevant);
    if (position >= 0 && position < 5) found++;
  }
  return { recall: found / answerable, empty: empty / unanswerable };
}
