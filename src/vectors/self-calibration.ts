/**
 * A dataset's own calibration (issue 23, item 4). The shipped constants (calibration.ts) were fitted on
 * one labelled set; on another dataset the same evidence means something else (the described set's
 * held-out half: at 0.5 hybrid emptied 10% of the in-domain unanswerable questions, scores were off by 0.44
 * on average). So once a dataset is indexed, knode asks it questions whose answers it knows:
 *
 * - a **pseudo-question** is four words of middling frequency (in at least 2 chunks, at most a tenth of
 *   them) drawn from one chunk of a sampled file, in text order: a few of the words a person would recall;
 * - a quarter of the sampled files are **left out**: their questions are searched with the file's chunks
 *   removed from the candidates, so they are in-domain questions the dataset cannot answer.
 *
 * Per search mode, the shipped model's log-odds z of every candidate are rescaled: the slope by logistic
 * regression of "the candidate is from the question's file" on z (Platt scaling), and the point where the
 * score is 0.5 moved to the largest z at which recall@5 of the answerable questions keeps at least 95% of
 * its value (the contract's 0.5: API-CONTRACT 5), which empties as many unanswerable questions as possible.
 * The features and their relative weights stay the shipped ones: two numbers per mode are what a few hundred
 * questions can fit without overfitting.
 */

import { nextTurn } from '../util/next-turn.ts';
import { seededRandom } from '../util/seeded-random.ts';
import { type Calibration, type Evidence, type LogisticModel, logit, rescaled } from './calibration.ts';
import { STOPWORDS } from './keyword-query.ts';
import { fitLogistic } from './logistic.ts';
import { type Candidate, evidenceOf, type QueryFacts, rank, type SearchMode } from './ranking.ts';

/**
 * Below this many files a dataset keeps the shipped constants. Where 0.5 falls is decided by a few questions
 * around the 95% mark: fitted on the small evaluation set (60 files, 45 pseudo-questions), 0.5 kept 0.84 of
 * hybrid recall@5 on its questions (the shipped constants 0.95); on the described set (292 files, 219) 0.96.
 */
export const MIN_FILES = 100;
/** Files sampled for questions: 300 questions take a few seconds to embed and search. */
const MAX_FILES = 300;
/** One file in LEAVE_OUT_EVERY is left out: its question becomes an unanswerable one. */
const LEAVE_OUT_EVERY = 4;
const WORDS_PER_QUESTION = 4;
const MIN_WORDS_PER_QUESTION = 3;
/** The share of recall@5 (at threshold 0) that must remain at 0.5. */
const RECALL_KEPT = 0.95;
/** The results a query returns when its recall is counted (the evaluation's `limit`). */
const LIMIT = 10;
/** Shifts tried when placing 0.5: quantiles of the candidates' log-odds. */
const PLACEMENTS = 120;

/** A sampled file: one of its chunks' text, and how many chunks of the dataset hold each of its words. */
export interface SampledFile {
  readonly fileKey: string;
  readonly text: string;
  readonly wordChunks: ReadonlyMap<string, number>;
}

/** What the fit needs from the store (store.ts implements it). */
export interface CalibrationSource {
  sampleFiles(datasetId: string, count: number, seed: number): Promise<{ chunkCount: number; files: SampledFile[] }>;
  candidates(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    mode: SearchMode,
    limit: number,
    leftOut?: string,
  ): Promise<{ candidates: Candidate[]; facts: QueryFacts }>;
}

export interface FittedCalibration {
  readonly embedder: string;
  readonly fittedAt: string;
  /** Answerable pseudo-questions, and those made unanswerable by leaving their file out. */
  readonly questions: number;
  readonly unanswerable: number;
  readonly chunkCount: number;
  readonly calibration: Calibration;
}

interface PseudoQuestion {
  readonly text: string;
  readonly fileKey: string;
  readonly leftOut: boolean;
}

interface Observed {
  readonly question: PseudoQuestion;
  readonly candidates: Candidate[];
  readonly facts: QueryFacts;
  readonly evidence: Evidence[];
}

/**
 * Fits the dataset's calibration, or undefined when it is too small (the shipped one stays). `embed`
 * turns the questions into the dataset's query vectors (its own embedder).
 */
export async function fitDatasetCalibration(input: {
  readonly datasetId: string;
  readonly embedder: string;
  readonly shipped: Calibration;
  readonly source: CalibrationSource;
  readonly embed: (texts: string[]) => Promise<Float32Array[]>;
  readonly now: string;
  readonly options?: Partial<FitOptions>;
}): Promise<FittedCalibration | undefined> {
  const { datasetId, source, shipped } = input;
  const options: FitOptions = { ...FIT_OPTIONS, ...input.options };
  const sample = await source.sampleFiles(datasetId, MAX_FILES, 1);
  if (sample.files.length < MIN_FILES) return undefined;
  const questions = pseudoQuestions(sample.files, sample.chunkCount, options);
  const answerable = questions.filter((question) => !question.leftOut).length;
  if (answerable < MIN_FILES * (1 - 1 / LEAVE_OUT_EVERY) || questions.length - answerable < 5) return undefined;
  const vectors = await input.embed(questions.map((question) => question.text));
  const observe = async (mode: SearchMode): Promise<Observed[]> => {
    const rows: Observed[] = [];
    for (const [index, question] of questions.entries()) {
      // Up to 900 searches in a row: each in a turn of its own, so requests are answered between them
      // (chained through promises, synchronous SQLite calls never let the loop poll its sockets).
      await nextTurn();
      const vector = mode === 'keyword' ? undefined : vectors[index];
      const leftOut = question.leftOut ? question.fileKey : undefined;
      const { candidates, facts } = await source.candidates(datasetId, vector, question.text, mode, LIMIT, leftOut);
      rows.push({ question, candidates, facts, evidence: evidenceOf(candidates, facts) });
    }
    return rows;
  };
  const keyword = place(await observe('keyword'), 'keyword', shipped.keyword, shipped, options);
  const vector = place(await observe('vector'), 'vector', shipped.vector, { ...shipped, keyword }, options);
  const hybrid = place(await observe('hybrid'), 'hybrid', shipped.hybrid, { ...shipped, keyword }, options);
  return {
    embedder: input.embedder,
    fittedAt: input.now,
    questions: answerable,
    unanswerable: questions.length - answerable,
    chunkCount: sample.chunkCount,
    calibration: {
      name: `fitted on this dataset ${input.now.slice(0, 10)} (${answerable} questions, ${questions.length - answerable} unanswerable; ${fitBasis(shipped)})`,
      keyword,
      vector,
      hybrid,
    },
  };
}

/**
 * What a fit rescales, as its name ends: a fit made by another version of this file, or from other shipped
 * constants (an upgrade), is stale and made again (datasets/calibrator.ts).
 */
const FIT_VERSION = 1;

export function fitBasis(shipped: Calibration): string {
  return `fit ${FIT_VERSION} of ${shipped.name}`;
}

/**
 * Whether a stored fit still rescales what knode ships for `embedder`: one made for another embedder, by
 * another version of this file or from other shipped constants is not used (until it is made again; a
 * dataset that has shrunk below MIN_FILES keeps the shipped constants for good).
 */
export function fitIsCurrent(fitted: FittedCalibration, embedder: string, shipped: Calibration): boolean {
  return fitted.embedder === embedder && fitted.calibration.name.endsWith(`${fitBasis(shipped)})`);
}

/** The knobs of the fit, tuned on the described set's tuning half (scripts/eval/described/tune-fit.ts). */
export interface FitOptions {
  /** The share of the pseudo-questions' recall@5 kept at 0.5. */
  readonly recallKept: number;
  /** Words of a question taken from another file (a person's words that the document does not use). */
  readonly foreignWords: number;
  readonly wordsPerQuestion: number;
  /** Modes whose 0.5 is never below the log-odds at which the fitted slope says "as likely relevant as not". */
  readonly floorAtEven: readonly SearchMode[];
}

/**
 * Chosen on the described set's tuning half (scripts/eval/described/tune-fit.ts; hybrid recall@5 kept at 0.5 /
 * unanswerable emptied): questions of the document's own four words are easier than people's, and 0.5 placed
 * for them kept 0.84 / 0.32 (0.85 / 0.24 when placed to keep 99% of theirs); with one of the four words taken
 * from another file 0.95 / 0.04, as the shipped constants (two foreign words: 0.99 / 0.00). In vector mode
 * USE-lite's first result is the document 28% of the time, so keeping 95% of recall there meant scoring nearly
 * every result above 0.5 (kept 0.99, none emptied, calibration error 0.62): 0.5 stays where the fitted slope
 * says "as likely relevant as not" (kept 0.00 / emptied 1.00, as the shipped constants: 0.08 / 0.96).
 */
export const FIT_OPTIONS: FitOptions = {
  recallKept: RECALL_KEPT,
  foreignWords: 1,
  wordsPerQuestion: WORDS_PER_QUESTION,
  floorAtEven: ['vector'],
};

/** One question per sampled file that has enough words of middling frequency; every fourth file left out. */
export function pseudoQuestions(files: readonly SampledFile[], chunkCount: number, options: FitOptions = FIT_OPTIONS): PseudoQuestion[] {
  const most = Math.max(2, Math.floor(chunkCount / 10));
  const middling = (file: SampledFile) =>
    [...new Set(file.text.toLowerCase().match(/\p{L}{3,}/gu) ?? [])].filter((word) => {
      const chunks = file.wordChunks.get(word) ?? 0;
      return !STOPWORDS.has(word) && chunks >= 2 && chunks <= most;
    });
  const questions: PseudoQuestion[] = [];
  for (const [index, file] of files.entries()) {
    const random = seededRandom(index + 1);
    const words = middling(file);
    if (words.length < MIN_WORDS_PER_QUESTION) continue;
    // Foreign words come from the next file's chunk (the last file's from the first's), when it has some.
    const neighbour = files[(index + 1) % files.length];
    const foreign = neighbour && neighbour !== file ? middling(neighbour).filter((word) => !words.includes(word)) : [];
    const borrowed = Math.min(options.foreignWords, foreign.length);
    const own = Math.max(1, options.wordsPerQuestion - borrowed);
    const picked = new Set<string>();
    while (picked.size < Math.min(own, words.length)) picked.add(words[Math.floor(random() * words.length)] as string);
    const chosen = words.filter((word) => picked.has(word));
    for (let added = 0; added < borrowed; added++) {
      chosen.splice(Math.floor(random() * (chosen.length + 1)), 0, foreign.splice(Math.floor(random() * foreign.length), 1)[0] as string);
    }
    const text = chosen.join(' ');
    questions.push({ text, fileKey: file.fileKey, leftOut: questions.length % LEAVE_OUT_EVERY === LEAVE_OUT_EVERY - 1 });
  }
  return questions;
}

/**
 * The mode's model rescaled: its slope fitted on the candidates, 0.5 placed at the largest log-odds that
 * keeps RECALL_KEPT of recall@5. `calibration` supplies the other modes' models that `rank` uses (hybrid
 * scores a chunk without a vector with the keyword model).
 */
function place(
  rows: readonly Observed[],
  mode: SearchMode,
  model: LogisticModel,
  calibration: Calibration,
  options: FitOptions,
): LogisticModel {
  const { z, y } = logOdds(rows, mode, model, calibration);
  if (z.length === 0 || !y.includes(1)) return model;
  const [fittedSlope = 1, fittedIntercept = 0] = fitLogistic(
    z.map((value) => [value, 1]),
    y,
  );
  const fitted = Number.isFinite(fittedSlope) && fittedSlope > 0.05;
  const slope = fitted ? fittedSlope : 1;
  // Where the fitted slope says a candidate is as likely relevant as not.
  const even = fitted ? -fittedIntercept / fittedSlope : 0;
  const recallAt = (candidate: LogisticModel, threshold: number) =>
    recallWith(rows, mode, { ...calibration, [mode]: candidate }, threshold);
  const full = recallAt(rescaled(model, slope, 0), 0).recall;
  if (full === 0) return model;
  const sorted = [...z].sort((a, b) => a - b);
  let shift = sorted[0] as number;
  for (let step = 0; step <= PLACEMENTS; step++) {
    const next = sorted[Math.min(sorted.length - 1, Math.floor((step / PLACEMENTS) * (sorted.length - 1)))] as number;
    if (recallAt(rescaled(model, slope, next), 0.5).recall < options.recallKept * full) break;
    shift = next;
  }
  if (options.floorAtEven.includes(mode)) shift = Math.max(shift, even);
  return round(rescaled(model, slope, shift));
}

/**
 * The model's log-odds of each candidate it scores (`z`) and whether the candidate is the question's file (`y`).
 * In hybrid mode a chunk without a vector is scored by the keyword model, rescaled already: left out.
 */
function logOdds(
  rows: readonly Observed[],
  mode: SearchMode,
  model: LogisticModel,
  calibration: Calibration,
): { z: number[]; y: number[] } {
  const z: number[] = [];
  const y: number[] = [];
  for (const row of rows) {
    for (const [index, candidate] of row.candidates.entries()) {
      const own = mode === 'hybrid' && candidate.cosine === undefined ? calibration.keyword : model;
      if (own !== model) continue;
      z.push(logit(model, row.evidence[index] as Evidence));
      y.push(!row.question.leftOut && candidate.fileKey === row.question.fileKey ? 1 : 0);
    }
  }
  return { z, y };
}

/** Recall@5 of the answerable questions ranked with `modes` at `threshold`, and how many left-out ones come back empty. */
function recallWith(rows: readonly Observed[], mode: SearchMode, modes: Calibration, threshold: number): { recall: number; empty: number } {
  let found = 0;
  let answerable = 0;
  let empty = 0;
  for (const row of rows) {
    const ranked = rank(row.candidates, row.facts, mode, modes, threshold).slice(0, LIMIT);
    if (row.question.leftOut) {
      if (ranked.length === 0) empty++;
      continue;
    }
    answerable++;
    const files = ranked.map((entry) => row.candidates.find((candidate) => candidate.rowid === entry.rowid)?.fileKey);
    const position = files.indexOf(row.question.fileKey);
    if (position >= 0 && position < 5) found++;
  }
  return { recall: found / Math.max(1, answerable), empty };
}

function round(model: LogisticModel): LogisticModel {
  const weights: Record<string, number> = {};
  for (const [feature, weight] of Object.entries(model.weights)) weights[feature] = Math.round((weight as number) * 1000) / 1000;
  return { weights, intercept: Math.round(model.intercept * 1000) / 1000 };
}
