/**
 * An experiment (issue 23, item 2): does "a chunk's similarity = its best window-sized piece" help **hybrid**
 * search, knode's default mode? pieces.ts measured it for vector search alone; in hybrid mode the cosine is one
 * feature of a logistic model (src/vectors/ranking.ts), so it may matter more, or less.
 *
 * For the described set (tuning and held-out halves) and the fresh sample, from a copy of each index that
 * `run.ts` made (`run.ts`, `run.ts --sample fresh`), every question's hybrid candidates are gathered as the
 * store gathers them (sqlite-search.ts `candidates`, `limit` 10: BM25's best 40 and the vector side's nearest
 * 40, each completed with the other signal), once per variant of a chunk's similarity:
 *   - opening (today): the chunk's stored vector, which USE-lite makes from its first 128 tokens;
 *   - best piece, same pool: today's candidates, each cosine replaced by the best of its chunk's pieces
 *     (400 characters at word boundaries, cut as pieces.ts cuts them);
 *   - best piece: the vector side's 40 taken by best-piece similarity too (their BM25 and matched words as
 *     the store computes them for vector-side candidates: none when they hold no query word);
 *   - best 128-token window: as best piece, the pieces being USE-lite's windows (at most 128 tokens of its
 *     tokenizer, src/embeddings/use-lite-tokenizer.ts, cut between words), so every token is seen once.
 * `cosineGap` follows from the pool (ranking.ts `evidenceOf`). The pool of "opening" is checked against
 * the store's own `candidates` for every question.
 *
 * Per variant, the hybrid model is fitted as fit.ts fits it, on the described set's **tuning half only**
 * (src/vectors/logistic.ts, positives weighted 10, the shipped hybrid features), `bestHeld` is added with
 * its shipped weight 16 and the intercept placed where 0.5 keeps 95% of the tuning half's recall@5, as the
 * shipped constants were made (calibration.ts, rejection.ts). Printed per split: the share of answerable
 * questions whose document is among the candidates at all; hybrid recall@1, recall@5, MRR@10 at threshold 0;
 * at 0.5 (the threshold keeping 95% on the tuning half) the recall@5 kept and the share of unanswerable
 * questions emptied; vector search alone as pieces.ts measures it (every chunk, documents ranked by their
 * best chunk). Two references follow: today's pool fitted without the cosine features (what any cosine can
 * change), and the shipped hybrid weights (fitted on the first set; the cosine's gap weighs more there).
 * One job, one file: the experiment, its pools and its fits (over 400 lines with its figures).
 *
 * Measured 2026-11-26: described set 3c5220c59c5b (390 questions, 1,962 chunks, 5,102 pieces of 400
 * characters, 4,990 windows of 128 tokens), fresh sample 5980539dd452 (258 questions, 1,377 chunks, 3,588
 * pieces, 3,491 windows). The "opening" pools equal the store's own candidates for all 648 questions (for 6,
 * two chunks of equal cosine swap places at the vector list's cut). One question is 0.007 of a half's answerable
 * questions, 0.005 of the fresh sample's; 0.02 of a half's unanswerable ones, 0.015 of the fresh sample's.
 *
 *   variant                split     in pool | hybrid @0: R@1  R@5   MRR@10 | @0.5: kept emptied | vector: R@1  R@5   MRR@10
 *   opening (today)        tuning    0.959   |     0.694 0.891 0.779         |      0.95  0.14     |      0.279 0.531 0.385
 *                          held-out  0.979   |     0.752 0.938 0.829         |      0.99  0.13     |      0.276 0.566 0.390
 *                          fresh     0.979   |     0.824 0.912 0.869         |      0.98  0.22     |      0.259 0.570 0.390
 *   best piece, same pool  tuning    0.959   |     0.680 0.898 0.772         |      0.95  0.14     |      0.299 0.537 0.392
 *                          held-out  0.979   |     0.752 0.938 0.827         |      0.99  0.13     |      0.317 0.510 0.398
 *                          fresh     0.979   |     0.824 0.917 0.868         |      0.99  0.20     |      0.285 0.622 0.432
 *   best piece             tuning    0.946   |     0.694 0.891 0.779         |      0.95  0.14     |      (as above)
 *                          held-out  0.966   |     0.752 0.938 0.829         |      0.99  0.13     |
 *                          fresh     0.979   |     0.824 0.912 0.870         |      0.99  0.20     |
 *   best 128-token window  tuning    0.932   |     0.687 0.898 0.773         |      0.95  0.14     |      0.279 0.490 0.366
 *                          held-out  0.972   |     0.752 0.938 0.829         |      0.99  0.13     |      0.303 0.510 0.380
 *                          fresh     0.979   |     0.824 0.922 0.869         |      0.99  0.20     |      0.290 0.549 0.407
 *   today, cosine left out tuning    0.959   |     0.694 0.884 0.777         |      0.95  0.14     |
 *                          held-out  0.979   |     0.759 0.931 0.831         |      0.99  0.13     |
 *                          fresh     0.979   |     0.824 0.912 0.867         |      0.99  0.20     |
 *   shipped: opening       tuning    0.959   |     0.694 0.898 0.782         |      0.95  0.18     |
 *                          held-out  0.979   |     0.772 0.938 0.842         |      0.99  0.21     |
 *                          fresh     0.979   |     0.819 0.933 0.871         |      0.98  0.23     |
 *   shipped: best piece    tuning    0.946   |     0.680 0.905 0.774         |      0.95  0.16     |
 *                          held-out  0.966   |     0.772 0.931 0.841         |      0.99  0.21     |
 *                          fresh     0.979   |     0.819 0.948 0.871         |      0.98  0.20     |
 *   shipped: best window   tuning    0.932   |     0.687 0.898 0.773         |      0.95  0.16     |
 *                          held-out  0.972   |     0.766 0.931 0.838         |      0.99  0.19     |
 *                          fresh     0.979   |     0.813 0.938 0.868         |      0.98  0.20     |
 *
 * Reading: best piece does not help hybrid search. Fitted on the tuning half, every variant is within 0.014
 * (two questions) of today on every split, and so is today's pool with no cosine at all: the fit gives the
 * keyword evidence the ranking (weights relative 5.2, coverage 1.3, strength 0.7 against cosine 0.4 and
 * cosineGap 1.3 today), so a better cosine has little to move. Taking the vector side's 40 by best piece
 * changes 21 of the 74 candidates a question, yet loses two documents from the pool on each half (the
 * windows four and one). With the shipped weights the differences are as small (fresh recall@5 +0.015, tuning recall@1
 * -0.014, unanswerable emptied -0.02 on the tuning half and -0.03 fresh). Vector search alone gains on the
 * fresh sample (recall@5 +0.052, MRR@10 +0.042) after losing on the held-out half (recall@5 -0.056): a split
 * that cannot be told from noise at this size, and hybrid does not carry it. Not worth 2.6x the embedding work.
 * What knode then built for issue 23's item 2 is "best piece, same pool" (src/vectors/piece-similarity.ts): the
 * candidates found by the opening, as here, their cosines raised to the best piece; "best piece" showed that
 * indexing every piece finds no better candidates for hybrid search, at 2.5 to 4.4 times the vector side's time.
 *
 * Usage: bun scripts/eval/described/pieces-hybrid.ts [--window 400] [--tokens 128]
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../../../src/db/database.ts';
import { UseLiteEmbedder } from '../../../src/embeddings/use-lite.ts';
import { useLiteModelFiles } from '../../../src/embeddings/use-lite-model.ts';
import { UseLiteTokenizer, type Vocabulary } from '../../../src/embeddings/use-lite-tokenizer.ts';
import { type Calibration, calibrationFor, type Evidence, type Feature, type LogisticModel } from '../../../src/vectors/calibration.ts';
import { hiddenRanges } from '../../../src/vectors/chunk-sets.ts';
import { vectorExtensionPath } from '../../../src/vectors/extension.ts';
import { keywordCandidates, keywordQuery, keywordScoresOf, matchedWeights } from '../../../src/vectors/keyword-search.ts';
import { fitLogistic } from '../../../src/vectors/logistic.ts';
import { type Candidate, evidenceOf, rank } from '../../../src/vectors/ranking.ts';
import { assembleCandidates, candidatesWanted } from '../../../src/vectors/search-assembly.ts';
import { requireIndex } from '../../../src/vectors/sqlite-index.ts';
import { SqliteVectorStore } from '../../../src/vectors/sqlite-store.ts';
import type { CandidateSet } from '../../../src/vectors/store.ts';
import { datasetTables } from '../../../src/vectors/tables.ts';
import { COMMITTED_DESCRIBED_SET, COMMITTED_FRESH_SET, DESCRIBED_CACHE, type DescribedQuestion } from './build.ts';
import { textPieces } from './text-pieces.ts';

const { values } = parseArgs({ options: { window: { type: 'string', default: '400' }, tokens: { type: 'string', default: '128' } } });
const WINDOW = Number(values.window);
const TOKENS = Number(values.tokens);
/** The `limit` of the evaluation's questions (run.ts): the candidates are those a search of 10 results gathers. */
const LIMIT = 10;
const WANTED = candidatesWanted(LIMIT);
/** As fit.ts. */
const POSITIVE_WEIGHT = 10;
const HYBRID_FEATURES: readonly Feature[] = ['strength', 'relative', 'coverage', 'cosine', 'cosineGap'];
/** `bestHeld`'s shipped weight (calibration.ts BEST_HELD_WEIGHT): added to the fitted model, as it was to the shipped one. */
const BEST_HELD_WEIGHT = calibrationFor('use-lite').hybrid.weights.bestHeld ?? 0;
const SPLITS = ['tuning', 'held-out', 'fresh'] as const;

interface Question {
  text: string;
  split: string;
  /** The relevant document's path, null for a question the index cannot answer. */
  relevant: string | null;
}
interface Chunk {
  rowid: number;
  fileKey: string;
  content: string;
}
/** One or more vectors per chunk (`owner`: the chunk of each); a chunk's similarity is its best vector's. */
interface Scheme {
  vectors: Float32Array[];
  owner: number[];
}
type Variant = 'opening (today)' | 'best piece, same pool' | 'best piece' | 'best 128-token window';
const VARIANTS: readonly Variant[] = ['opening (today)', 'best piece, same pool', 'best piece', 'best 128-token window'];
/** Per variant, per question: its hybrid candidates. */
type Pools = Map<Variant, CandidateSet[]>;
interface Measured {
  questions: Question[];
  pools: Pools;
  /** Per variant, per answerable question: the rank of its document in vector search alone (pieces.ts), 0 when past 10. */
  vectorRanks: Map<Variant, number[]>;
}

const embedder = new UseLiteEmbedder({});
const tokenizer = new UseLiteTokenizer(JSON.parse(readFileSync(useLiteModelFiles().vocabulary, 'utf8')) as Vocabulary);
const described = await measureSample('described', COMMITTED_DESCRIBED_SET);
const fresh = await measureSample('fresh', COMMITTED_FRESH_SET);
await embedder.close();

// One fit per variant, on the described set's tuning half, measured on every split (the fresh sample's pools are from its own index).
const questions = [...described.questions, ...fresh.questions];
const poolsOf = (variant: Variant) => [...(described.pools.get(variant) ?? []), ...(fresh.pools.get(variant) ?? [])];
const today = poolsOf('opening (today)');
console.log(
  '\nvariant                 split     in pool | hybrid @0: R@1   R@5   MRR@10 | @0.5: kept emptied | vector: R@1   R@5   MRR@10',
);
// Then what bounds any cosine's part: today's pool, the model fitted without the cosine features; and the
// shipped hybrid weights (fitted on the first set, where the cosine's gap weighs more), the intercept placed alike.
const rows: { name: string; variant: Variant; features: readonly Feature[]; shipped?: true }[] = [
  ...VARIANTS.map((variant) => ({ name: variant, variant, features: HYBRID_FEATURES })),
  { name: 'today, cosine left out', variant: 'opening (today)', features: HYBRID_FEATURES.filter((f) => !f.startsWith('cosine')) },
  { name: 'shipped: opening', variant: 'opening (today)', features: HYBRID_FEATURES, shipped: true },
  { name: 'shipped: best piece', variant: 'best piece', features: HYBRID_FEATURES, shipped: true },
  { name: 'shipped: best window', variant: 'best 128-token window', features: HYBRID_FEATURES, shipped: true },
];
for (const { name, variant, features, shipped } of rows) {
  const pools = poolsOf(variant);
  const model = placed(shipped ? calibrationFor('use-lite').hybrid : fitted(questions, pools, features), questions, pools);
  for (const split of SPLITS) {
    const zero = figures(questions, pools, model, split, 0);
    const half = figures(questions, pools, model, split, 0.5);
    const vector = vectorFigures(split === 'fresh' ? fresh : described, variant, split);
    const vectorColumns =
      features.includes('cosine') && !shipped ? [vector.r1, vector.r5, vector.mrr].map((value) => value.toFixed(3)).join(' ') : '';
    console.log(
      `${name.padEnd(23)} ${split.padEnd(9)} ${zero.pooled.toFixed(3)}   |            ${zero.r1.toFixed(3)} ${zero.r5.toFixed(3)} ${zero.mrr.toFixed(3)}  |` +
        `       ${(half.r5 / zero.r5).toFixed(2)}  ${half.empty.toFixed(2)}   |         ${vectorColumns}`,
    );
  }
  const size = pools.reduce((sum, pool) => sum + pool.candidates.length, 0) / pools.length;
  const shared =
    pools.reduce((sum, pool, index) => {
      const todays = new Set((today[index] as CandidateSet).candidates.map((candidate) => candidate.rowid));
      return sum + pool.candidates.filter((candidate) => todays.has(candidate.rowid)).length;
    }, 0) / pools.length;
  console.log(`  ${size.toFixed(1)} candidates a question, ${shared.toFixed(1)} of them in today's pool; model ${JSON.stringify(model)}`);
}

/** Opens a copy of the sample's index, gathers every question's candidates per variant and vector search's ranks. */
async function measureSample(name: string, committedPath: string): Promise<Measured> {
  const set = JSON.parse(readFileSync(committedPath, 'utf8')) as {
    fingerprint: string;
    answerable: DescribedQuestion[];
    unanswerable: DescribedQuestion[];
  };
  const questions: Question[] = [
    ...set.answerable.map((question) => ({ text: question.question, split: question.split, relevant: question.relevant })),
    ...set.unanswerable.map((question) => ({ text: question.question, split: question.split, relevant: null })),
  ];
  const indexDir = join(DESCRIBED_CACHE, `index-${name}-${set.fingerprint}-use-lite`);
  if (!existsSync(join(indexDir, 'knode.db'))) throw new Error(`no index of ${committedPath}: run scripts/eval/described/run.ts first`);
  // A copy: opening a database runs migrations and the keyword query writes a scratch table; the index stays as run.ts left it.
  const copy = mkdtempSync(join(tmpdir(), 'knode-pieces-'));
  for (const file of ['knode.db', 'knode.db-wal'])
    if (existsSync(join(indexDir, file))) copyFileSync(join(indexDir, file), join(copy, file));
  const database = await openDatabase(copy, [vectorExtensionPath()]);
  try {
    const store = new SqliteVectorStore(database);
    const datasetId = await database.exclusive(
      (sqlite) => (sqlite.query('SELECT dataset_id FROM vector_indexes').get() as { dataset_id: string }).dataset_id,
    );
    const tables = datasetTables(datasetId);
    const { chunks, stored } = await database.exclusive((sqlite) => {
      const rows = sqlite
        .query(
          "SELECT c.row_id AS rowid, c.file_key AS fileKey, c.content FROM vector_chunks c JOIN vector_sets s ON s.dataset_id = c.dataset_id AND c.row_id BETWEEN s.first_row AND s.last_row AND s.state = 'visible' WHERE c.dataset_id = ? ORDER BY c.row_id",
        )
        .all(tables.datasetId) as Chunk[];
      const vectors = sqlite.query(`SELECT rowid, embedding FROM ${tables.vectors}`).all() as { rowid: number; embedding: Uint8Array }[];
      const byRow = new Map(vectors.map((row) => [row.rowid, new Float32Array(row.embedding.slice().buffer)]));
      return { chunks: rows, stored: rows.map((row) => byRow.get(row.rowid) as Float32Array) };
    });
    const pieceTexts = chunks.map((chunk) => textPieces(chunk.content, WINDOW));
    const windowTexts = chunks.map((chunk) => tokenWindows(chunk.content));
    const opening: Scheme = { vectors: stored, owner: chunks.map((_, index) => index) };
    const byPiece = await scheme(pieceTexts);
    const byWindow = await scheme(windowTexts);
    const queryVectors = await embedCached(questions.map((question) => question.text));
    console.log(
      `${name} ${set.fingerprint}: ${questions.length} questions, ${chunks.length} chunks, ${byPiece.vectors.length} pieces of at most ${WINDOW} characters, ${byWindow.vectors.length} windows of at most ${TOKENS} tokens`,
    );

    // The store's own candidates, to check that the pools below are gathered as it gathers them.
    const reference: CandidateSet[] = [];
    for (const [index, question] of questions.entries()) {
      reference.push(await store.candidates(datasetId, queryVectors[index], question.text, 'hybrid', LIMIT));
    }
    const pools: Pools = new Map(VARIANTS.map((variant) => [variant, []]));
    const vectorRanks = new Map<Variant, number[]>(VARIANTS.map((variant) => [variant, []]));
    const at = new Map(chunks.map((chunk, i) => [chunk.rowid, i]));
    const checks = { same: 0, tie: 0 };
    await database.exclusive((sqlite) => {
      const index = requireIndex(sqlite, tables);
      const hidden = hiddenRanges(sqlite, tables);
      for (const [q, question] of questions.entries()) {
        const query = queryVectors[q] as Float32Array;
        const similarity = {
          opening: similarities(query, opening, chunks.length),
          piece: similarities(query, byPiece, chunks.length),
          window: similarities(query, byWindow, chunks.length),
        };
        const keyword = keywordQuery(sqlite, tables, index.chunkCount, question.text);
        const keywordList = keyword ? keywordCandidates(sqlite, tables, keyword, WANTED, index.keywordLayout, hidden) : new Map();
        /** The hybrid candidates with the vector side's nearest by `listedBy`, every cosine from `cosineOf`. */
        const pool = (listedBy: Float64Array, cosineOf: Float64Array): CandidateSet => {
          const cosines = new Map<number, number>();
          for (const i of nearest(listedBy, WANTED)) cosines.set((chunks[i] as Chunk).rowid, cosineOf[i] as number);
          const bm25 = new Map<number, number>(keywordList);
          for (const rowid of bm25.keys()) if (!cosines.has(rowid)) cosines.set(rowid, cosineOf[at.get(rowid) as number] as number);
          const unscored = [...cosines.keys()].filter((rowid) => !bm25.has(rowid));
          if (keyword)
            for (const [rowid, score] of keywordScoresOf(sqlite, tables, keyword, unscored, index.keywordLayout)) bm25.set(rowid, score);
          const files = new Map([...cosines.keys()].map((rowid) => [rowid, (chunks[at.get(rowid) as number] as Chunk).fileKey]));
          const matched = keyword ? matchedWeights(sqlite, tables, keyword, [...bm25.keys()]) : new Map<number, number>();
          return assembleCandidates({ bm25, cosines, files, matched, words: keyword?.words, chunkCount: index.chunkCount });
        };
        const asToday = pool(similarity.opening, similarity.opening);
        checks[checkAgainst(reference[q] as CandidateSet, asToday, question.text)]++;
        pools.get('opening (today)')?.push(asToday);
        pools.get('best piece, same pool')?.push(pool(similarity.opening, similarity.piece));
        pools.get('best piece')?.push(pool(similarity.piece, similarity.piece));
        pools.get('best 128-token window')?.push(pool(similarity.window, similarity.window));
        if (question.relevant === null) continue;
        const ofVariant: Record<Variant, Float64Array> = {
          'opening (today)': similarity.opening,
          'best piece, same pool': similarity.piece,
          'best piece': similarity.piece,
          'best 128-token window': similarity.window,
        };
        for (const variant of VARIANTS) vectorRanks.get(variant)?.push(documentRank(ofVariant[variant], chunks, question.relevant));
      }
    });
    console.log(
      `  the pools of "opening (today)" are the store's own candidates: the same for ${checks.same} questions, ` +
        `the same but for chunks of equal cosine swapped at the vector list's cut for ${checks.tie}`,
    );
    return { questions, pools, vectorRanks };
  } finally {
    await database.close();
    rmSync(copy, { recursive: true, force: true });
  }
}

/**
 * Whether `mine` holds the store's candidates with the same evidence (cosines to float precision): `same`, or
 * `tie` when they differ only by chunks of equal cosine (to 1e-5) swapped at the vector list's cut, which the
 * store's float32 arithmetic orders one way and this script's the other. Fails otherwise.
 */
function checkAgainst(store: CandidateSet, mine: CandidateSet, text: string): 'same' | 'tie' {
  const close = (a: Candidate, b: Candidate) =>
    a.fileKey === b.fileKey && a.bm25 === b.bm25 && a.matched === b.matched && Math.abs((a.cosine ?? 9) - (b.cosine ?? 9)) < 1e-5;
  const mineByRow = new Map(mine.candidates.map((candidate) => [candidate.rowid, candidate]));
  const storeByRow = new Map(store.candidates.map((candidate) => [candidate.rowid, candidate]));
  const onlyStore = store.candidates.filter((candidate) => !mineByRow.has(candidate.rowid));
  const onlyMine = mine.candidates.filter((candidate) => !storeByRow.has(candidate.rowid));
  const shared = store.candidates.every(
    (candidate) => !mineByRow.has(candidate.rowid) || close(candidate, mineByRow.get(candidate.rowid) as Candidate),
  );
  const swapped =
    onlyStore.length === onlyMine.length &&
    onlyStore.every((candidate) => onlyMine.some((other) => Math.abs((other.cosine ?? 9) - (candidate.cosine ?? 9)) < 1e-5));
  if (!(shared && swapped && store.facts.queryWeight === mine.facts.queryWeight && store.facts.chunkCount === mine.facts.chunkCount)) {
    throw new Error(`the candidates gathered here differ from the store's for "${text}"`);
  }
  return onlyStore.length === 0 ? 'same' : 'tie';
}

/**
 * The text cut between words into consecutive windows of at most TOKENS tokens of USE-lite's tokenizer, each
 * a slice of the text as it is (the first is about what the model reads of the whole chunk today). A word's
 * tokens are counted alone (SentencePiece cuts at spaces), then each window is checked whole and trimmed.
 */
function tokenWindows(text: string): string[] {
  const words = [...text.matchAll(/\S+/g)].map((match) => ({
    start: match.index,
    end: match.index + match[0].length,
    tokens: tokenizer.encode(match[0]).length,
  }));
  const tokensOf = (from: number, to: number) =>
    tokenizer.encode(text.slice((words[from] as { start: number }).start, (words[to - 1] as { end: number }).end)).length;
  const out: string[] = [];
  let from = 0;
  while (from < words.length) {
    let to = from + 1;
    let estimate = (words[from] as { tokens: number }).tokens;
    while (to < words.length && estimate + (words[to] as { tokens: number }).tokens <= TOKENS)
      estimate += (words[to++] as { tokens: number }).tokens;
    while (to > from + 1 && tokensOf(from, to) > TOKENS) to--;
    while (to < words.length && tokensOf(from, to + 1) <= TOKENS) to++;
    out.push(text.slice((words[from] as { start: number }).start, (words[to - 1] as { end: number }).end));
    from = to;
  }
  return out.length > 0 ? out : [''];
}

/** The vectors of every chunk's texts, with the chunk each belongs to. */
async function scheme(textsOfChunks: readonly string[][]): Promise<Scheme> {
  const vectors = await embedCached(textsOfChunks.flat());
  return { vectors, owner: textsOfChunks.flatMap((texts, chunk) => texts.map(() => chunk)) };
}

/** USE-lite's vectors of `texts`, kept in the evaluation cache under a hash of the texts (embedding them takes minutes). */
async function embedCached(texts: readonly string[]): Promise<Float32Array[]> {
  const key = createHash('sha256').update(JSON.stringify(texts)).digest('hex').slice(0, 16);
  const file = join(DESCRIBED_CACHE, `pieces-vectors-use-lite-${key}.f32`);
  if (existsSync(file)) {
    const flat = new Float32Array(readFileSync(file).buffer.slice(0));
    const dimension = flat.length / texts.length;
    return texts.map((_, index) => flat.slice(index * dimension, (index + 1) * dimension));
  }
  const vectors = await embedder.embed([...texts]);
  const flat = new Float32Array(vectors.length * embedder.dimension);
  for (const [index, vector] of vectors.entries()) flat.set(vector, index * embedder.dimension);
  writeFileSync(file, new Uint8Array(flat.buffer));
  return vectors;
}

/** Each chunk's similarity to the query: the best dot product of its vectors (all are unit vectors). */
function similarities(query: Float32Array, { vectors, owner }: Scheme, chunkCount: number): Float64Array {
  const best = new Float64Array(chunkCount).fill(Number.NEGATIVE_INFINITY);
  for (const [index, vector] of vectors.entries()) {
    let dot = 0;
    for (let i = 0; i < vector.length; i++) dot += (vector[i] as number) * (query[i] as number);
    const chunk = owner[index] as number;
    if (dot > (best[chunk] as number)) best[chunk] = dot;
  }
  return best;
}

/** The `count` most similar chunks, most similar first. */
function nearest(similarity: Float64Array, count: number): number[] {
  return [...similarity.keys()].sort((a, b) => (similarity[b] as number) - (similarity[a] as number) || a - b).slice(0, count);
}

/** Vector search alone as pieces.ts ranks: documents by their best chunk; the relevant one's rank, 0 past 10. */
function documentRank(similarity: Float64Array, chunks: readonly Chunk[], relevant: string): number {
  const best = new Map<string, number>();
  for (const [index, chunk] of chunks.entries()) {
    if ((similarity[index] as number) > (best.get(chunk.fileKey) ?? Number.NEGATIVE_INFINITY))
      best.set(chunk.fileKey, similarity[index] as number);
  }
  const rank = [...best].sort((a, b) => b[1] - a[1]).findIndex(([file]) => file === relevant) + 1;
  return rank >= 1 && rank <= 10 ? rank : 0;
}

function vectorFigures(sample: Measured, variant: Variant, split: string) {
  const ranks = (sample.vectorRanks.get(variant) ?? []).filter(
    (_, index) => sample.questions.filter((question) => question.relevant !== null)[index]?.split === split,
  );
  const share = (keep: (rank: number) => number) => ranks.reduce((sum, rank) => sum + keep(rank), 0) / Math.max(1, ranks.length);
  return {
    r1: share((rank) => (rank === 1 ? 1 : 0)),
    r5: share((rank) => (rank >= 1 && rank <= 5 ? 1 : 0)),
    mrr: share((rank) => (rank >= 1 ? 1 / rank : 0)),
  };
}

/** The hybrid model of `features` fitted as fit.ts fits it, on the tuning half's candidates only, with `bestHeld` added at its shipped weight. */
function fitted(questions: readonly Question[], pools: readonly CandidateSet[], features: readonly Feature[]): LogisticModel {
  const x: number[][] = [];
  const y: number[] = [];
  for (const [index, question] of questions.entries()) {
    if (question.split !== 'tuning') continue;
    const { candidates, facts } = pools[index] as CandidateSet;
    const evidence = evidenceOf(candidates, facts);
    for (const [at, candidate] of candidates.entries()) {
      x.push([...features.map((feature) => (evidence[at] as Evidence)[feature]), 1]);
      y.push(candidate.fileKey === question.relevant ? 1 : 0);
    }
  }
  const weights = fitLogistic(x, y, POSITIVE_WEIGHT);
  const model: Partial<Record<Feature, number>> = { bestHeld: BEST_HELD_WEIGHT };
  for (const [index, feature] of features.entries()) model[feature] = round(weights[index] as number);
  return { weights: model, intercept: round(weights[features.length] as number) };
}

/** The model with its intercept placed (bisected) where 0.5 keeps 95% of the tuning half's recall@5 (rejection.ts). */
function placed(model: LogisticModel, questions: readonly Question[], pools: readonly CandidateSet[]): LogisticModel {
  const full = figures(questions, pools, model, 'tuning', 0).r5;
  let low = -60;
  let high = 60;
  for (let step = 0; step < 30; step++) {
    const middle = (low + high) / 2;
    if (figures(questions, pools, { ...model, intercept: model.intercept - middle }, 'tuning', 0.5).r5 >= 0.95 * full) low = middle;
    else high = middle;
  }
  return { ...model, intercept: round(model.intercept - low) };
}

/** Hybrid recall@1, recall@5, MRR@10 of `split`'s answerable questions, the share whose document is a candidate, and the share of its unanswerable ones left empty. */
function figures(questions: readonly Question[], pools: readonly CandidateSet[], model: LogisticModel, split: string, threshold: number) {
  const calibration: Calibration = { ...calibrationFor('use-lite'), hybrid: model };
  let r1 = 0;
  let r5 = 0;
  let mrr = 0;
  let answerable = 0;
  /** Answerable questions whose document is among the candidates at all: what any model can rank. */
  let pooled = 0;
  let empty = 0;
  let unanswerable = 0;
  for (const [index, question] of questions.entries()) {
    if (question.split !== split) continue;
    const { candidates, facts } = pools[index] as CandidateSet;
    const ranked = rank(candidates, facts, 'hybrid', calibration, threshold).slice(0, LIMIT);
    if (question.relevant === null) {
      unanswerable++;
      if (ranked.length === 0) empty++;
      continue;
    }
    answerable++;
    if (candidates.some((candidate) => candidate.fileKey === question.relevant)) pooled++;
    const files = ranked.map((entry) => candidates.find((candidate) => candidate.rowid === entry.rowid)?.fileKey);
    const position = files.indexOf(question.relevant) + 1;
    if (position === 1) r1++;
    if (position >= 1 && position <= 5) r5++;
    if (position >= 1) mrr += 1 / position;
  }
  return {
    r1: r1 / answerable,
    r5: r5 / answerable,
    mrr: mrr / answerable,
    pooled: pooled / answerable,
    empty: empty / Math.max(1, unanswerable),
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
