import type { Database as SqliteDatabase } from 'bun:sqlite';
import { now, type OpenedDatabase } from '../db/database.ts';
import { nextTurn } from '../util/next-turn.ts';
import type { Calibration } from './calibration.ts';
import {
  addVectors,
  blob,
  type ChunkRow,
  type ChunkSet,
  checkVector,
  collectGarbage,
  discardSet,
  discardStaged,
  filesToEmbed,
  type HiddenRange,
  hiddenRanges,
  type IndexShape,
  keywordInsert,
  publishSet,
  readRows,
  reserveSet,
  retireFile,
  visibleSet,
  writeRows,
} from './chunk-sets.ts';
import { countWords, type KeywordQuery, keywordCandidates, keywordQuery, keywordScoresOf, matchedWeights } from './keyword-search.ts';
import { type Candidate, type QueryFacts, type Ranked, rank, type SearchMode } from './ranking.ts';
import type { FittedCalibration, SampledFile } from './self-calibration.ts';
import {
  createKeywordTablesSql,
  createTablesSql,
  type DatasetTables,
  datasetTables,
  dropKeywordTablesSql,
  dropTablesSql,
  inRanges,
  KEYWORD_LAYOUT,
  leadOf,
  outsideRanges,
  sourceWords,
} from './tables.ts';
import { distanceTo, MAX_KNN, type Neighbour, nearestChunks, type VectorScan } from './vector-search.ts';

export type { SearchMode } from './ranking.ts';
export type { VectorScan } from './vector-search.ts';

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

/** Every candidate of a query with its evidence, as the evaluation's fit reads it (scripts/eval/fit.ts). */
export interface CandidateSet {
  readonly candidates: Candidate[];
  readonly facts: QueryFacts;
}

/** A chunk as it is given to the store; its vector may come later (addVectors). */
export interface ChunkText {
  /** Kept as the chunk's `document_id`; a UUID is made when absent. */
  readonly id?: string;
  readonly content: string;
  readonly metadata: Record<string, unknown>;
  readonly embedding?: Float32Array;
}

/** A file's chunks with their vectors, written at once (replaceFileChunks). */
export interface ChunkInput extends ChunkText {
  readonly embedding: Float32Array;
}

/**
 * A file's chunks, made as they are written (`chunk(i)` is asked once per chunk, in order), so a large
 * file's chunks need not all be in memory as rows at once.
 */
export interface ChunkSource {
  readonly count: number;
  chunk(index: number): ChunkText;
}

/** A file's chunks being written as a hidden set (stage), until they are published or discarded. */
export interface StagedFile {
  readonly datasetId: string;
  readonly fileKey: string;
  readonly source: ChunkSource;
  /** Chunks written so far, and how many of them came with their vector. */
  written: number;
  embedded: number;
  /** Reserved with the first write; a file small enough for one transaction is written as it is published. */
  set?: ChunkSet;
  /** The document's lead (tables.ts, leadOf), taken from its first chunk when that is written: indexed on every chunk. */
  lead?: string;
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

export interface IndexInfo {
  readonly dimension: number;
  readonly chunkCount: number;
}

export class VectorIndexMissingError extends Error {
  override readonly name = 'VectorIndexMissingError';
  constructor(datasetId: string) {
    super(`dataset ${datasetId} has no vector index`);
  }
}

/**
 * Candidates per wanted result, from each list: the scores re-order them (and lower repeated files), so
 * more than `limit` must be looked at.
 */
const CANDIDATES_PER_RESULT = 4;
const MAX_DIMENSION = 8192;
/**
 * The most chunks (and characters) one write transaction takes. Measured here with 1,000-character chunks:
 * 10 to 40 ms per 256 chunks (FTS5 and its merges most of it). Each transaction blocks the thread that
 * answers requests, and queries wait for it, so it is kept far below the 200 ms the API may stall at most.
 */
const WRITE_ROWS = 256;
const WRITE_CHARACTERS = 256_000;
/** Chunks deleted per transaction when garbage (a replaced or deleted file's chunks) is collected: about 20 ms. */
const COLLECT_ROWS = 512;
/** Chunk rows deleted per transaction when a dataset's index is dropped (plain rows: cheaper). */
const DROP_ROWS = 5_000;

/**
 * The most vectors one write transaction takes: sqlite-vec inserts one in about 0.2 ms, so a window of
 * the embedding lane (256) is written in four transactions of about 12 ms, with requests answered between.
 */
const VECTOR_ROWS = 64;

/**
 * Chunks of every dataset, searchable by vector (sqlite-vec `vec0`, cosine) and keyword (FTS5, BM25).
 * Per dataset: one vec0 table, one contentless FTS5 table, rows in the shared `vector_chunks` table;
 * the three share a rowid. All work runs on the one connection through `exclusive`, synchronously, so
 * a search reads one consistent state.
 *
 * Writes are short transactions: a file's chunks are written in batches as a hidden set and then swapped
 * in at once (chunk-sets.ts), its vectors can come later (a chunk without one is found by its keywords),
 * and replaced or deleted chunks are hidden at once and deleted in batches by `collectGarbage`.
 */
export class VectorStore {
  private longestWrite = 0;
  private runningCollection: Promise<void> | undefined;
  private queuedCollection: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly opened: OpenedDatabase) {}

  /** The longest write transaction so far, in milliseconds (the ingestion logs it with its progress). */
  get longestWriteMs(): number {
    return this.longestWrite;
  }

  /**
   * Creates the dataset's tables; again with the same dimension does nothing, with another it fails.
   * Called when a dataset starts: chunks a stop or a crash left half written are discarded.
   */
  async createDatasetIndex(datasetId: string, dimension: number): Promise<void> {
    const tables = datasetTables(datasetId);
    if (!Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION) {
      throw new Error(`vector dimension must be an integer from 1 to ${MAX_DIMENSION}, got ${dimension}`);
    }
    await this.write((sqlite) => {
      const existing = readIndex(sqlite, tables);
      if (existing && existing.dimension !== dimension) {
        throw new Error(`dataset ${datasetId} already has a ${existing.dimension}-dimension index, not ${dimension}`);
      }
      if (existing && existing.keywordLayout < KEYWORD_LAYOUT) rebuildKeywords(sqlite, tables);
      for (const statement of createTablesSql(tables, dimension)) sqlite.run(statement);
      if (!existing) {
        sqlite
          .query('INSERT INTO vector_indexes (dataset_id, dimension, chunk_count, keyword_layout, created_at) VALUES (?, ?, 0, ?, ?)')
          .run(tables.datasetId, dimension, KEYWORD_LAYOUT, now());
      }
      discardStaged(sqlite, tables);
    });
    // What a stop interrupted (or a crash left staged) is deleted now.
    void this.collectGarbage().catch(() => undefined);
  }

  /**
   * Drops the dataset's tables and chunks; a dataset without an index is left as it is. Its chunk rows go
   * first, in batches, so no transaction grows with the size of the dataset.
   */
  async dropDatasetIndex(datasetId: string): Promise<void> {
    const tables = datasetTables(datasetId);
    const batch = () =>
      this.write(
        (sqlite) =>
          sqlite
            .query('DELETE FROM vector_chunks WHERE row_id IN (SELECT row_id FROM vector_chunks WHERE dataset_id = ? LIMIT ?)')
            .run(tables.datasetId, DROP_ROWS).changes,
      );
    while ((await batch()) === DROP_ROWS);
    await this.write((sqlite) => {
      for (const statement of dropTablesSql(tables)) sqlite.run(statement);
      sqlite.query('DELETE FROM vector_chunks WHERE dataset_id = ?').run(tables.datasetId);
      sqlite.query('DELETE FROM vector_sets WHERE dataset_id = ?').run(tables.datasetId);
      sqlite.query('DELETE FROM vector_indexes WHERE dataset_id = ?').run(tables.datasetId);
      sqlite.query('DELETE FROM vector_calibrations WHERE dataset_id = ?').run(tables.datasetId);
    });
  }

  async indexInfo(datasetId: string): Promise<IndexInfo | undefined> {
    const tables = datasetTables(datasetId);
    const index = await this.opened.exclusive((sqlite) => readIndex(sqlite, tables));
    return index && { dimension: index.dimension, chunkCount: index.chunkCount };
  }

  /**
   * Replaces every chunk of one file (`fileKey`, e.g. its relative path) with `chunks`: staged, then
   * published at once, so a search sees the old chunks or the new ones, never a mix or neither. Returns the ids.
   */
  async replaceFileChunks(datasetId: string, fileKey: string, chunks: readonly ChunkInput[]): Promise<string[]> {
    const tables = datasetTables(datasetId);
    const index = await this.opened.exclusive((sqlite) => requireIndex(sqlite, tables));
    const rows = chunks.map((chunk) => ({ ...chunk, id: chunk.id ?? crypto.randomUUID() }));
    for (const row of rows) checkChunk(row, index.dimension);
    let staged: StagedFile | undefined;
    try {
      staged = await this.stage(datasetId, fileKey, { count: rows.length, chunk: (i) => rows[i] as ChunkText });
      if (!(await this.publish(staged))) throw new Error(`the chunks of ${fileKey} were deleted while they were written`);
    } finally {
      if (staged) await this.discard(staged);
      await this.collectGarbage();
    }
    return rows.map((row) => row.id);
  }

  /**
   * Writes a file's chunks as a hidden set, in short transactions (WRITE_ROWS), between which the API
   * answers; a file that fits in one transaction is written by `publish` instead. Nothing is visible until
   * `publish`; on failure or abort what was written is discarded.
   */
  async stage(datasetId: string, fileKey: string, source: ChunkSource, signal?: AbortSignal): Promise<StagedFile> {
    const tables = datasetTables(datasetId);
    const staged: StagedFile = { datasetId: tables.datasetId, fileKey, source, written: 0, embedded: 0 };
    if (fitsOneWrite(source)) return staged;
    try {
      while (staged.written < source.count) {
        signal?.throwIfAborted();
        await this.write((sqlite) => {
          const index = requireIndex(sqlite, tables);
          staged.set ??= reserveSet(sqlite, tables, fileKey, source.count);
          writeBatch(sqlite, tables, index, staged);
        });
      }
    } catch (error) {
      await this.discard(staged);
      throw error;
    }
    return staged;
  }

  /**
   * Makes the staged chunks the file's chunks and hides its old ones, in one short transaction (a file
   * with no chunks just loses its old ones). False when the set was discarded or the file deleted meanwhile.
   */
  async publish(staged: StagedFile): Promise<boolean> {
    const tables = datasetTables(staged.datasetId);
    const published = await this.write((sqlite) => {
      const index = requireIndex(sqlite, tables);
      if (staged.source.count === 0) {
        retireFile(sqlite, tables, staged.fileKey);
        return true;
      }
      if (!staged.set) {
        staged.set = reserveSet(sqlite, tables, staged.fileKey, staged.source.count);
        writeBatch(sqlite, tables, index, staged);
      }
      if (staged.written !== staged.source.count) throw new Error(`the chunks of ${staged.fileKey} are not all written`);
      return publishSet(sqlite, tables, staged.set.id);
    });
    if (published) void this.collectGarbage().catch(() => undefined);
    return published;
  }

  /** Drops chunks staged and not published (safe after a publish: the set is no longer staged). */
  async discard(staged: StagedFile): Promise<void> {
    const set = staged.set;
    if (!set) return;
    await this.write((sqlite) => discardSet(sqlite, set.id));
    void this.collectGarbage().catch(() => undefined);
  }

  /** Hides every chunk of one file at once; they are deleted in the background. Returns how many there were. */
  async retireFile(datasetId: string, fileKey: string): Promise<number> {
    const tables = datasetTables(datasetId);
    const hidden = await this.write((sqlite) => {
      requireIndex(sqlite, tables);
      return retireFile(sqlite, tables, fileKey);
    });
    void this.collectGarbage().catch(() => undefined);
    return hidden;
  }

  /** Removes every chunk of one file: hidden at once, deleted before this returns. Returns how many there were. */
  async deleteFileChunks(datasetId: string, fileKey: string): Promise<number> {
    const hidden = await this.retireFile(datasetId, fileKey);
    await this.collectGarbage();
    return hidden;
  }

  /**
   * Deletes hidden chunks (garbage sets) in batches of COLLECT_ROWS, one short transaction each. One
   * collection runs at a time; calls made meanwhile share the next one, which sees their garbage too.
   */
  collectGarbage(): Promise<void> {
    if (this.queuedCollection) return this.queuedCollection;
    const collection: Promise<void> = (this.runningCollection ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        this.queuedCollection = undefined;
        this.runningCollection = collection;
        while (!this.closed && (await this.write((sqlite) => collectGarbage(sqlite, COLLECT_ROWS))));
      })
      .finally(() => {
        if (this.runningCollection === collection) this.runningCollection = undefined;
      });
    this.queuedCollection = collection;
    return collection;
  }

  /** Stops collecting garbage (what is left is collected at the next start) and waits for the batch under way. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.runningCollection, this.queuedCollection]);
  }

  /**
   * About how many bytes a dataset's index takes in the database: the pages of its vector and keyword
   * tables (SQLite's dbstat, one b-tree each) and its chunks' text and metadata in the shared table.
   */
  async diskUse(datasetId: string): Promise<number> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => {
      const names = sqlite
        .query("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE ? OR name LIKE ?)")
        .all(`${tables.vectors}%`, `${tables.keywords}%`) as { name: string }[];
      const pages = sqlite.query('SELECT pgsize FROM dbstat WHERE name = ? AND aggregate = TRUE');
      let bytes = 0;
      for (const { name } of names) bytes += (pages.get(name) as { pgsize: number } | null)?.pgsize ?? 0;
      const rows = sqlite
        .query(
          'SELECT COALESCE(SUM(LENGTH(content) + LENGTH(metadata) + LENGTH(id) + LENGTH(file_key)), 0) AS bytes FROM vector_chunks WHERE dataset_id = ?',
        )
        .get(tables.datasetId) as { bytes: number };
      return bytes + rows.bytes;
    });
  }

  /** Files whose visible chunks still wait for vectors, in the order they became searchable. */
  async filesToEmbed(datasetId: string): Promise<string[]> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => filesToEmbed(sqlite, tables));
  }

  /** `unembeddedOf` for one file. */
  async unembedded(
    datasetId: string,
    fileKey: string,
    from: number | undefined,
    limits: { texts: number; characters: number },
  ): Promise<UnembeddedChunks | undefined> {
    return (await this.unembeddedOf(datasetId, [{ fileKey, from }], limits))[0];
  }

  /**
   * The next chunks without a vector of each file, from row `from` on (undefined: from its first one without
   * a vector), in order until `limits` are reached (later files are left out of the answer); undefined for a
   * file that has no visible chunks any more.
   */
  async unembeddedOf(
    datasetId: string,
    files: readonly { fileKey: string; from: number | undefined }[],
    limits: { texts: number; characters: number },
  ): Promise<(UnembeddedChunks | undefined)[]> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => {
      const answers: (UnembeddedChunks | undefined)[] = [];
      let { texts, characters } = limits;
      for (const { fileKey, from } of files) {
        if (texts <= 0 || characters <= 0) break;
        const set = visibleSet(sqlite, tables, fileKey);
        if (!set) {
          answers.push(undefined);
          continue;
        }
        const start = Math.max(from ?? 0, set.firstRow + set.embedded);
        const rows = start > set.lastRow ? [] : readRows(sqlite, start, set.lastRow, { texts, characters });
        answers.push({ from: start, rows, last: (rows.at(-1)?.rowid ?? start - 1) >= set.lastRow });
        texts -= rows.length;
        for (const row of rows) characters -= row.content.length;
      }
      return answers;
    });
  }

  /**
   * Adds the vectors of a file's visible chunks from row `firstRow` on (the first without one), in one
   * transaction. Undefined when those chunks are no longer the file's visible ones.
   */
  async addVectors(
    datasetId: string,
    fileKey: string,
    firstRow: number,
    vectors: readonly Float32Array[],
  ): Promise<EmbeddingProgress | undefined> {
    return (await this.addVectorsOf(datasetId, [{ fileKey, from: firstRow, vectors }]))[0];
  }

  /**
   * `addVectors` for several files (a window of the embedding lane), in transactions of at most
   * VECTOR_ROWS vectors: each commits its vectors with the count of them, so a crash loses none it wrote.
   */
  async addVectorsOf(datasetId: string, parts: readonly VectorPart[]): Promise<(EmbeddingProgress | undefined)[]> {
    const tables = datasetTables(datasetId);
    const progress: (EmbeddingProgress | undefined)[] = parts.map(() => undefined);
    const gone = new Set<number>();
    for (const slice of vectorSlices(parts, VECTOR_ROWS)) {
      await this.write((sqlite) => {
        const index = requireIndex(sqlite, tables);
        for (const { part, fileKey, from, vectors } of slice) {
          if (gone.has(part)) continue;
          const set = addVectors(sqlite, tables, index.dimension, fileKey, from, vectors);
          if (set) progress[part] = { embedded: set.embedded, count: set.count };
          else {
            gone.add(part); // no longer the file's visible chunks: the rest of its vectors have no place
            progress[part] = undefined;
          }
        }
      });
    }
    return progress;
  }

  /**
   * The dataset's best chunks for a query (API-CONTRACT 5): candidates from BM25 and/or the vector index,
   * scored with the mode's calibrated model (ranking.ts), chunks below `similarityThreshold` dropped,
   * at most `limit`. Keyword mode needs no query vector.
   */
  async search(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    options: SearchOptions,
  ): Promise<SearchHit[]> {
    const limit = Math.floor(options.limit);
    if (!(limit >= 1)) throw new Error(`search limit must be at least 1, got ${options.limit}`);
    const wanted = Math.min(MAX_KNN, limit * CANDIDATES_PER_RESULT);
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => {
      const found = candidatesNow(sqlite, tables, queryEmbedding, queryText, options.mode, { wanted, limit }, options.vectorScan);
      const ranked = rank(found.candidates, found.facts, options.mode, options.calibration, options.similarityThreshold).slice(0, limit);
      return loadHits(sqlite, ranked, options.includeMetadata);
    });
  }

  /**
   * The candidates a search of `limit` results scores, with their evidence, unscored (for fitting the
   * calibration). `leftOut`: a file whose chunks are removed, as if it were not in the dataset.
   */
  async candidates(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    mode: SearchMode,
    limit: number,
    leftOut?: string,
  ): Promise<CandidateSet> {
    const wanted = Math.min(MAX_KNN, limit * CANDIDATES_PER_RESULT);
    const tables = datasetTables(datasetId);
    const found = await this.opened.exclusive((sqlite) =>
      candidatesNow(sqlite, tables, queryEmbedding, queryText, mode, { wanted, limit }),
    );
    if (leftOut === undefined) return found;
    return { ...found, candidates: found.candidates.filter((candidate) => candidate.fileKey !== leftOut) };
  }

  /**
   * Up to `count` of the dataset's visible files (spread evenly over them, the same ones each time for the
   * same files), each with the text of one of its chunks (chosen by `seed`) and how many chunks hold each of
   * its words: what a dataset's pseudo-questions are made of (self-calibration.ts).
   */
  async sampleFiles(datasetId: string, count: number, seed: number): Promise<{ chunkCount: number; files: SampledFile[] }> {
    const tables = datasetTables(datasetId);
    return this.opened.exclusive((sqlite) => {
      const index = requireIndex(sqlite, tables);
      const sets = sqlite
        .query(
          "SELECT file_key AS fileKey, first_row AS firstRow, count FROM vector_sets WHERE dataset_id = ? AND state = 'visible' ORDER BY file_key",
        )
        .all(tables.datasetId) as { fileKey: string; firstRow: number; count: number }[];
      const stride = Math.max(1, sets.length / count);
      const files: SampledFile[] = [];
      const content = sqlite.query('SELECT content FROM vector_chunks WHERE row_id = ?');
      for (let at = 0; Math.floor(at) < sets.length && files.length < count; at += stride) {
        const set = sets[Math.floor(at)] as { fileKey: string; firstRow: number; count: number };
        if (set.count === 0) continue;
        const row = content.get(set.firstRow + ((Math.floor(at) * 7919 + seed) % set.count)) as { content: string } | null;
        if (!row) continue;
        const words = [...new Set(row.content.toLowerCase().match(/\p{L}{3,}/gu) ?? [])].slice(0, 200);
        const wordChunks = new Map(countWords(sqlite, tables, words).map((entry) => [entry.word, entry.chunks]));
        files.push({ fileKey: set.fileKey, text: row.content, wordChunks });
      }
      return { chunkCount: index.chunkCount, files };
    });
  }

  /** Stores a dataset's own calibration (self-calibration.ts), replacing the one before. */
  async saveCalibration(datasetId: string, fitted: FittedCalibration): Promise<void> {
    const tables = datasetTables(datasetId);
    await this.write((sqlite) => {
      requireIndex(sqlite, tables);
      sqlite
        .query(
          'INSERT INTO vector_calibrations (dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration) VALUES (?, ?, ?, ?, ?, ?, ?) ' +
            'ON CONFLICT (dataset_id) DO UPDATE SET embedder = excluded.embedder, fitted_at = excluded.fitted_at, questions = excluded.questions, ' +
            'unanswerable = excluded.unanswerable, chunk_count = excluded.chunk_count, calibration = excluded.calibration',
        )
        .run(
          tables.datasetId,
          fitted.embedder,
          fitted.fittedAt,
          fitted.questions,
          fitted.unanswerable,
          fitted.chunkCount,
          JSON.stringify(fitted.calibration),
        );
    });
  }

  /** The datasets' own calibrations, by dataset id (those never fitted are absent). */
  async fittedCalibrations(datasetIds: readonly string[]): Promise<Map<string, FittedCalibration>> {
    const ids = datasetIds.map((id) => datasetTables(id).datasetId);
    if (ids.length === 0) return new Map();
    const rows = await this.opened.exclusive(
      (sqlite) =>
        sqlite
          .query(
            'SELECT dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration FROM vector_calibrations ' +
              `WHERE dataset_id IN (${ids.map(() => '?').join(', ')})`,
          )
          .all(...ids) as {
          dataset_id: string;
          embedder: string;
          fitted_at: string;
          questions: number;
          unanswerable: number;
          chunk_count: number;
          calibration: string;
        }[],
    );
    return new Map(
      rows.map((row) => [
        row.dataset_id,
        {
          embedder: row.embedder,
          fittedAt: row.fitted_at,
          questions: row.questions,
          unanswerable: row.unanswerable,
          chunkCount: row.chunk_count,
          calibration: JSON.parse(row.calibration) as Calibration,
        },
      ]),
    );
  }

  /** One write transaction, timed, in a turn of its own: requests get in between two writes. */
  private async write<T>(work: (sqlite: SqliteDatabase) => T): Promise<T> {
    await nextTurn();
    return this.opened.exclusive((sqlite) => {
      const started = performance.now();
      try {
        return sqlite.transaction(() => work(sqlite)).immediate();
      } finally {
        this.longestWrite = Math.max(this.longestWrite, performance.now() - started);
      }
    });
  }
}

interface VectorPart {
  readonly fileKey: string;
  readonly from: number;
  readonly vectors: readonly Float32Array[];
}

/** The parts' vectors in consecutive slices of at most `rows`, a part split where a slice ends. */
function vectorSlices(parts: readonly VectorPart[], rows: number): (VectorPart & { part: number })[][] {
  const slices: (VectorPart & { part: number })[][] = [];
  let slice: (typeof slices)[number] = [];
  let room = rows;
  for (const [part, { fileKey, from, vectors }] of parts.entries()) {
    // A part with no vectors still gets its place: writing it records that the file has all of them.
    let offset = 0;
    do {
      const taken = vectors.slice(offset, offset + room);
      slice.push({ part, fileKey, from: from + offset, vectors: taken });
      offset += taken.length;
      room -= taken.length;
      if (room === 0) {
        slices.push(slice);
        slice = [];
        room = rows;
      }
    } while (offset < vectors.length);
  }
  if (slice.length > 0) slices.push(slice);
  return slices;
}

function fitsOneWrite(source: ChunkSource): boolean {
  if (source.count > WRITE_ROWS) return false;
  let characters = 0;
  for (let index = 0; index < source.count; index++) characters += source.chunk(index).content.length;
  return characters <= WRITE_CHARACTERS;
}

/** Writes the staged file's next chunks (at most WRITE_ROWS and WRITE_CHARACTERS) into its set. */
function writeBatch(sqlite: SqliteDatabase, tables: DatasetTables, index: IndexShape, staged: StagedFile): void {
  const set = staged.set as ChunkSet;
  const rows: ChunkRow[] = [];
  let characters = 0;
  for (let next = staged.written; next < staged.source.count && rows.length < WRITE_ROWS && characters < WRITE_CHARACTERS; next++) {
    const row = chunkRow(staged.source.chunk(next), index.dimension);
    rows.push(row);
    characters += row.content.length;
  }
  if (staged.written === 0) staged.lead = leadOf(rows[0]?.content ?? '');
  writeRows(sqlite, tables, index, { ...set, embedded: staged.embedded }, staged.written, rows, staged.lead ?? '');
  staged.written += rows.length;
  staged.embedded += rows.filter((row) => row.embedding).length;
}

/**
 * BM25's best `wanted` and the vector index's nearest `wanted` (by mode), each completed with the other
 * signal in hybrid mode, with the file each comes from.
 */
function candidatesNow(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  queryEmbedding: Float32Array | undefined,
  queryText: string,
  mode: SearchMode,
  { wanted, limit }: { wanted: number; limit: number },
  vectorScan?: VectorScan,
): CandidateSet {
  const index = requireIndex(sqlite, tables);
  const vectorSide = mode !== 'keyword';
  if (vectorSide && queryEmbedding === undefined) throw new Error(`${mode} search needs the query's vector`);
  if (queryEmbedding && queryEmbedding.length !== index.dimension) {
    throw new Error(`query vector has ${queryEmbedding.length} dimensions, dataset index has ${index.dimension}`);
  }
  if (index.chunkCount === 0) return { candidates: [], facts: { queryWeight: 0, chunkCount: 0 } };
  // Staged and garbage sets are not the files' chunks: every list leaves their rows out.
  const hidden = hiddenRanges(sqlite, tables);
  const keyword: KeywordQuery | undefined = mode === 'vector' ? undefined : keywordQuery(sqlite, tables, index.chunkCount, queryText);
  const bm25 = keyword ? keywordCandidates(sqlite, tables, keyword, wanted, index.keywordLayout, hidden) : new Map<number, number>();
  const query = queryEmbedding ? blob(queryEmbedding) : undefined;
  const cosines = new Map<number, number>();
  if (vectorSide && query) {
    // The quantized scan oversamples by the results wanted (`limit`), not by the candidates.
    for (const hit of visibleNeighbours(sqlite, tables, index, hidden, query, wanted, limit, vectorScan)) {
      cosines.set(hit.rowid, 1 - hit.distance);
    }
  }
  if (mode === 'hybrid' && query) {
    for (const rowid of bm25.keys()) {
      if (cosines.has(rowid)) continue;
      const distance = distanceTo(sqlite, tables, query, rowid);
      if (distance !== undefined) cosines.set(rowid, 1 - distance);
    }
    const unscored = [...cosines.keys()].filter((rowid) => !bm25.has(rowid));
    if (keyword)
      for (const [rowid, score] of keywordScoresOf(sqlite, tables, keyword, unscored, index.keywordLayout)) bm25.set(rowid, score);
  }
  const rowids = [...new Set([...bm25.keys(), ...cosines.keys()])];
  const files = fileKeysOf(sqlite, rowids);
  const matched = keyword ? matchedWeights(sqlite, tables, keyword, [...bm25.keys()]) : new Map<number, number>();
  const candidates = rowids.map((rowid) => ({
    rowid,
    fileKey: files.get(rowid) ?? '',
    ...(bm25.has(rowid) ? { bm25: bm25.get(rowid) as number, matched: matched.get(rowid) ?? 0 } : {}),
    ...(cosines.has(rowid) ? { cosine: cosines.get(rowid) as number } : {}),
  }));
  const queryWeight = keyword?.words.reduce((sum, word) => sum + word.weight, 0) ?? 0;
  return { candidates, facts: { queryWeight, chunkCount: index.chunkCount } };
}

/**
 * The nearest visible chunks. The vector index holds hidden sets' vectors too, so it is asked for as many
 * more as there are hidden vectors and those are left out; when that would pass sqlite-vec's k limit, the
 * visible vectors are scanned exactly instead (rare: a large file being replaced).
 */
function visibleNeighbours(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  index: IndexRow,
  hidden: readonly HiddenRange[],
  query: Uint8Array,
  wanted: number,
  limit: number,
  vectorScan?: VectorScan,
): Neighbour[] {
  const hiddenVectors = hidden.reduce((sum, range) => sum + range.vectors, 0);
  if (hiddenVectors === 0) return nearestChunks(sqlite, tables, index, query, wanted, limit, vectorScan);
  if (wanted + hiddenVectors > MAX_KNN) return visibleByExactScan(sqlite, tables, hidden, query, wanted);
  const all = { dimension: index.dimension, chunkCount: index.chunkCount + hiddenVectors };
  return nearestChunks(sqlite, tables, all, query, wanted + hiddenVectors, limit, vectorScan)
    .filter((hit) => !inRanges(hit.rowid, hidden))
    .slice(0, wanted);
}

function visibleByExactScan(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  hidden: readonly HiddenRange[],
  query: Uint8Array,
  wanted: number,
): Neighbour[] {
  const outside = outsideRanges('rowid', hidden);
  return sqlite
    .query(
      `SELECT rowid, vec_distance_cosine(embedding, ?) AS distance FROM ${tables.vectors} WHERE 1${outside.sql} ORDER BY distance LIMIT ?`,
    )
    .all(query, ...outside.params, wanted) as Neighbour[];
}

function fileKeysOf(sqlite: SqliteDatabase, rowids: readonly number[]): Map<number, string> {
  if (rowids.length === 0) return new Map();
  const rows = sqlite
    .query(`SELECT row_id, file_key FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`)
    .all(...rowids) as { row_id: number; file_key: string }[];
  return new Map(rows.map((row) => [row.row_id, row.file_key]));
}

interface IndexRow {
  readonly dimension: number;
  readonly chunkCount: number;
  /** The columns of the keyword table (tables.ts, KEYWORD_LAYOUT). */
  readonly keywordLayout: number;
}

function readIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow | undefined {
  const row = sqlite
    .query('SELECT dimension, chunk_count AS chunkCount, keyword_layout AS keywordLayout FROM vector_indexes WHERE dataset_id = ?')
    .get(tables.datasetId) as IndexRow | null;
  return row ?? undefined;
}

/**
 * Rebuilds a dataset's keyword table in the current layout from the chunks' stored text and metadata
 * (inside the caller's transaction): no file is read or embedded again.
 */
function rebuildKeywords(sqlite: SqliteDatabase, tables: DatasetTables): void {
  for (const statement of dropKeywordTablesSql(tables)) sqlite.run(statement);
  for (const statement of createKeywordTablesSql(tables)) sqlite.run(statement);
  const insert = keywordInsert(sqlite, tables, KEYWORD_LAYOUT);
  // Each chunk with its set's first chunk, whose opening is the document's lead.
  const rows = sqlite
    .query(
      'SELECT c.row_id, c.file_key, c.content, c.metadata, f.content AS first FROM vector_chunks c ' +
        'LEFT JOIN vector_sets s ON s.dataset_id = c.dataset_id AND c.row_id BETWEEN s.first_row AND s.last_row ' +
        'LEFT JOIN vector_chunks f ON f.row_id = s.first_row WHERE c.dataset_id = ?',
    )
    .iterate(tables.datasetId) as Iterable<{
    row_id: number;
    file_key: string;
    content: string;
    metadata: string;
    first: string | null;
  }>;
  for (const row of rows) insert(row.row_id, row.content, titleOf(row.metadata), sourceWords(row.file_key), leadOf(row.first ?? ''));
  sqlite.query('UPDATE vector_indexes SET keyword_layout = ? WHERE dataset_id = ?').run(KEYWORD_LAYOUT, tables.datasetId);
}

function titleOf(metadata: string): string {
  const title = (JSON.parse(metadata) as { title?: unknown }).title;
  return typeof title === 'string' ? title : '';
}

function requireIndex(sqlite: SqliteDatabase, tables: DatasetTables): IndexRow {
  const index = readIndex(sqlite, tables);
  if (!index) throw new VectorIndexMissingError(tables.datasetId);
  return index;
}

function checkChunk(chunk: ChunkText, dimension: number): void {
  if (chunk.embedding !== undefined) checkVector(chunk.embedding, dimension);
  if (typeof chunk.content !== 'string') throw new Error('chunk content must be a string');
}

/** A chunk as the store writes it: checked, its id made, its metadata serialised. */
function chunkRow(chunk: ChunkText, dimension: number): ChunkRow {
  checkChunk(chunk, dimension);
  return {
    id: chunk.id ?? crypto.randomUUID(),
    content: chunk.content,
    metadata: JSON.stringify(chunk.metadata ?? {}),
    title: typeof chunk.metadata?.title === 'string' ? chunk.metadata.title : '',
    ...(chunk.embedding ? { embedding: chunk.embedding } : {}),
  };
}

function loadHits(sqlite: SqliteDatabase, ranked: readonly Ranked[], includeMetadata: boolean): SearchHit[] {
  if (ranked.length === 0) return [];
  const rowids = ranked.map((entry) => entry.rowid);
  const rows = sqlite
    .query(`SELECT row_id, id, content, metadata FROM vector_chunks WHERE row_id IN (${rowids.map(() => '?').join(', ')})`)
    .all(...rowids) as { row_id: number; id: string; content: string; metadata: string }[];
  const byRowid = new Map(rows.map((row) => [row.row_id, row]));
  const hits: SearchHit[] = [];
  for (const { rowid, score } of ranked) {
    const row = byRowid.get(rowid);
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
