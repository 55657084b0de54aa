/**
 * What the rest of knode may ask of a dataset's chunk, vector and keyword index: the seam between knode and
 * a storage engine. `sqlite-store.ts` implements it on sqlite-vec + FTS5 in the one SQLite database; a second
 * engine (PostgreSQL + pgvector) implements the same interface. Callers hold a `VectorStore`, never an
 * engine's class: only the wiring (services.ts) names one.
 *
 * A dataset's index is filled in two phases (docs/ARCHITECTURE.md, "A file, step by step"): a file's chunks
 * are written hidden (`stage`) and swapped in at once (`publish`), searchable by their keywords; their vectors
 * come later (`unembeddedOf`, `addVectorsOf`), in order, so a restart resumes where the vectors stop.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import type { ChunkVectors } from '../embeddings/pieces.ts';
import type { Calibration } from './calibration.ts';
import type { Candidate, QueryFacts, SearchMode } from './ranking.ts';
import type { CalibrationSource, FittedCalibration, SampledFile } from './self-calibration.ts';
import type { VectorScan } from './vector-search.ts';

export interface SearchOptions {
  readonly mode: SearchMode;
  readonly limit: number;
  /** 0..1; chunks whose calibrated score is below it are dropped, in every mode. */
  readonly similarityThreshold: number;
  readonly includeMetadata: boolean;
  /** The dataset's embedder's models (calibration.ts, calibrationFor). */
  readonly calibration: Calibration;
  readonly vectorScan?: VectorScan;
}

/** One returned document, as the query response carries it (API-CONTRACT 5). */
export interface SearchHit {
  readonly document_id: string;
  readonly content: string;
  /** The calibrated relevance in [0, 1] (calibration.ts), never increasing down the list. */
  readonly similarity_score: number;
  readonly metadata: Record<string, unknown>;
}

/** A chunk beside another in its file: its id (`document_id`) and text. */
export interface NeighbourChunk {
  readonly id: string;
  readonly content: string;
}

/** The chunks around one chunk of a file, each side in file order (`before` ends with the chunk just before it). */
export interface ChunkNeighbours {
  readonly before: readonly NeighbourChunk[];
  readonly after: readonly NeighbourChunk[];
}

/** Every candidate of a query with its evidence, as the evaluation's fit reads it (scripts/eval/fit.ts). */
export interface CandidateSet {
  readonly candidates: Candidate[];
  readonly facts: QueryFacts;
}

/** A chunk as it is given to the store; its vector may come later (addVectorsOf). */
export interface ChunkText {
  /** Kept as the chunk's `document_id`; a UUID is made when absent. */
  readonly id?: string;
  readonly content: string;
  readonly metadata: Record<string, unknown>;
  readonly embedding?: Float32Array;
}

/**
 * A file's chunks, made as they are written (`chunk(i)` is asked once per chunk, in order), so a large
 * file's chunks need not all be in memory as rows at once.
 */
export interface ChunkSource {
  readonly count: number;
  chunk(index: number): ChunkText;
}

/**
 * A file's chunks being written hidden (`stage`), until they are published or discarded. Only the store
 * that staged them reads what else it holds (how far the writing is).
 */
export interface StagedFile {
  readonly datasetId: string;
  readonly fileKey: string;
  readonly source: ChunkSource;
}

/** How far a file's vectors are: its first `embedded` chunks of `count` have one. */
export interface EmbeddingProgress {
  readonly embedded: number;
  readonly count: number;
}

/** A file's next chunks without a vector, from row `from` on (embedding-lane.ts, LaneChunks). */
export interface UnembeddedChunks {
  readonly from: number;
  readonly rows: readonly { readonly rowid: number; readonly content: string }[];
  /** Nothing after these is left to embed. */
  readonly last: boolean;
}

/**
 * A file's vectors for its chunks from row `from` on (the first of them without one): each chunk's, one per
 * piece its embedder read (embeddings/pieces.ts). The first is the one the vector index searches; the
 * others are kept with the chunk (`later_pieces`) and raise its similarity when closer (piece-similarity.ts).
 */
export interface VectorPart {
  readonly fileKey: string;
  readonly from: number;
  readonly vectors: readonly ChunkVectors[];
}

/** A chunk's later pieces, as stored (piece-similarity.ts, packLaterPieces). */
export interface LaterPieces {
  readonly rowid: number;
  readonly pieces: Uint8Array;
}

/** How much text the embedding lane reads back at once. */
export interface ReadLimits {
  readonly texts: number;
  readonly characters: number;
}

/**
 * The lease a write is made under (coordination/leases.ts, Lease: a dataset's `dataset:<id>`), handed to the
 * write methods of a dataset's index by the replica holding it. The write is refused (it throws the lease's
 * LeaseLostError and its transaction rolls back) once the lease is lost, so a replica paused past the TTL
 * writes nothing after another took the dataset over. On PostgreSQL `fence` runs first in the write's
 * transaction and keeps a takeover waiting until it ends; the SQLite store, only ever on a single node whose
 * leases nobody else takes (LocalLeases: lost only when released here), checks `signal` inside its
 * synchronous transaction, which is what the local lease's fence does.
 */
export interface FencingLease {
  readonly signal: AbortSignal;
  fence(trx: Transaction<Database>): Promise<void>;
}

export class VectorIndexMissingError extends Error {
  override readonly name = 'VectorIndexMissingError';
  constructor(datasetId: string) {
    super(`dataset ${datasetId} has no vector index`);
  }
}

/**
 * Chunks of every dataset, searchable by vector and by keyword. Every write is short (a search or a request
 * never waits long behind one); a search sees a file's old chunks or its new ones, never a mix or neither.
 * A method on a dataset without an index fails with VectorIndexMissingError (`createDatasetIndex` aside).
 */
/**
 * What a store is built on, as the provisioners' details, each answer's `provider_info` and the dataset view
 * say it: a PostgreSQL without pgvector searches by keywords only, and the dataset view says why.
 */
export interface SearchEngine {
  /** `sqlite-vec` or `pgvector`. */
  readonly vectorStore: string;
  /** The vector extension's version; `none` where the server lacks it. */
  readonly vectorStoreVersion: string;
  /** `SQLite FTS5`, or `PostgreSQL BM25` (postings in plain SQL, FTS5's formula). */
  readonly keywordIndex: string;
  /** Why vector and hybrid searches cannot run on this store; undefined when they can. */
  readonly vectorsMissing: string | undefined;
}

/** One line for `provider_info.search_engine`: `sqlite-vec v0.1.9 + SQLite FTS5`. */
export function searchEngineName(engine: SearchEngine): string {
  return `${engine.vectorStore} ${engine.vectorStoreVersion} + ${engine.keywordIndex}`;
}

export interface VectorStore extends CalibrationSource {
  /** The longest write transaction so far, in milliseconds (the ingestion logs it with its progress). */
  readonly longestWriteMs: number;

  // The index of a dataset.

  /**
   * Creates the dataset's index; again with the same dimension does nothing, with another it fails.
   * Called when a dataset starts: chunks a stop or a crash left half written are discarded (under the
   * dataset's `lease`, so that a former holder never discards the chunks its successor is staging).
   */
  createDatasetIndex(datasetId: string, dimension: number, lease?: FencingLease): Promise<void>;
  /** Drops the dataset's index, chunks and calibration; a dataset without an index is left as it is. */
  dropDatasetIndex(datasetId: string): Promise<void>;
  /** About how many bytes the dataset's index takes (GET /settings/storage). */
  diskUse(datasetId: string): Promise<number>;

  // Phase 1: a file's chunks, searchable by their keywords.

  /**
   * Writes a file's chunks hidden, in short writes between which requests are answered; nothing is visible
   * until `publish`. On failure or abort (`signal`) what was written is discarded. Each write is fenced
   * with `lease` (FencingLease) when one is given, as are `publish` and `retireFile`.
   */
  stage(datasetId: string, fileKey: string, source: ChunkSource, signal?: AbortSignal, lease?: FencingLease): Promise<StagedFile>;
  /**
   * Makes the staged chunks the file's chunks and hides its old ones, at once (a file with no chunks just
   * loses its old ones). False when the chunks were discarded or the file retired meanwhile.
   */
  publish(staged: StagedFile, lease?: FencingLease): Promise<boolean>;
  /**
   * Drops chunks staged and not published (safe after a publish). Never fenced: it only turns the caller's
   * own hidden rows into garbage, which a former lease holder may still do.
   */
  discard(staged: StagedFile): Promise<void>;
  /** Hides every chunk of one file at once (they are deleted in the background). Returns how many there were. */
  retireFile(datasetId: string, fileKey: string, lease?: FencingLease): Promise<number>;

  // Phase 2: their vectors.

  /** Files whose visible chunks still wait for vectors, in the order they became searchable. */
  filesToEmbed(datasetId: string): Promise<string[]>;
  /**
   * The next chunks without a vector of each file, from row `from` on (undefined: from its first one without
   * a vector), in order until `limits` are reached (later files are left out of the answer); undefined for a
   * file that has no visible chunks any more.
   */
  unembeddedOf(
    datasetId: string,
    files: readonly { fileKey: string; from: number | undefined }[],
    limits: ReadLimits,
  ): Promise<(UnembeddedChunks | undefined)[]>;
  /**
   * Adds the vectors of files' visible chunks, each part from its first chunk without one, in short writes
   * that each keep the vectors with their count (a crash loses none written). Undefined for a part whose
   * chunks are no longer the file's visible ones.
   */
  addVectorsOf(datasetId: string, parts: readonly VectorPart[]): Promise<(EmbeddingProgress | undefined)[]>;

  // The later pieces of chunks embedded before whole-chunk vectors (ingestion/piece-backfill.ts).

  /** Whether every chunk of the dataset was embedded with its pieces (piece-similarity.ts, VECTOR_LAYOUT). */
  piecesComplete(datasetId: string): Promise<boolean>;
  /**
   * The visible chunks after row `after` that have their vector and no later pieces, in row order, within
   * `limits` (chunks that fit in one piece among them: only their text says so).
   */
  chunksWithoutPieces(datasetId: string, after: number, limits: ReadLimits): Promise<{ rowid: number; content: string }[]>;
  /** Stores chunks' later pieces; a chunk gone, or with pieces already, is left as it is. Never fenced: the same text gives the same pieces. */
  addLaterPieces(datasetId: string, chunks: readonly LaterPieces[]): Promise<void>;
  /**
   * Moves the index to the current vector layout; `changed` (some chunk got pieces): also drops the dataset's own
   * calibration, fitted on the openings' cosines, to be fitted again.
   */
  finishPieces(datasetId: string, changed: boolean): Promise<void>;

  // Search.

  /**
   * The dataset's best chunks for a query (API-CONTRACT 5): candidates from BM25 and/or the vector index,
   * scored with the mode's calibrated model (ranking.ts), chunks below `similarityThreshold` dropped,
   * at most `limit`. Keyword mode needs no query vector.
   */
  search(datasetId: string, queryEmbedding: Float32Array | undefined, queryText: string, options: SearchOptions): Promise<SearchHit[]>;
  /**
   * The candidates a search of `limit` results scores, with their evidence, unscored (for fitting the
   * calibration). `leftOut`: a file whose chunks are removed, as if it were not in the dataset.
   */
  candidates(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    mode: SearchMode,
    limit: number,
    leftOut?: string,
  ): Promise<CandidateSet>;

  /**
   * Up to `radius` chunks on each side of each of `chunkIds` in its file, by chunk id: what an answer's
   * context shows around a passage (query/answer-context.ts). Only visible chunks: an id that is not one of
   * a file's visible chunks (any more) is left out of the answer, and a file's first or last chunk has
   * nothing on one side.
   */
  neighbours(datasetId: string, chunkIds: readonly string[], radius: number): Promise<Map<string, ChunkNeighbours>>;

  // A dataset's own calibration (self-calibration.ts).

  /**
   * Up to `count` of the dataset's visible files (spread evenly over them, the same ones each time for the
   * same files), each with the text of one of its chunks (chosen by `seed`) and how many chunks hold each of
   * its words: what a dataset's pseudo-questions are made of.
   */
  sampleFiles(datasetId: string, count: number, seed: number): Promise<{ chunkCount: number; files: SampledFile[] }>;
  /** Stores a dataset's own calibration, replacing the one before. */
  saveCalibration(datasetId: string, fitted: FittedCalibration): Promise<void>;
  /** The datasets' own calibrations, by dataset id in lower case (those never fitted are absent). */
  fittedCalibrations(datasetIds: readonly string[]): Promise<Map<string, FittedCalibration>>;

  /** Stops background work (what is left is done at the next start) and waits for the part under way. */
  close(): Promise<void>;
}
