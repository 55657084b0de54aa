import type { Db } from '../../db/database.ts';
import { type Clock, systemClock } from '../../util/clock.ts';
import type { SearchMode } from '../ranking.ts';
import type { FittedCalibration, SampledFile } from '../self-calibration.ts';
import { StagingVectorStore } from '../staging-store.ts';
import type {
  CandidateSet,
  ChunkNeighbours,
  EmbeddingProgress,
  FencingLease,
  LaterPieces,
  ReadLimits,
  SearchHit,
  SearchOptions,
  UnembeddedChunks,
  VectorPart,
  VectorStore,
} from '../store.ts';
import { fittedCalibrations, sampleFiles, saveCalibration } from './calibrations.ts';
import type { ChunkSet } from './chunk-sets.ts';
import { PostgresConnection } from './connection.ts';
import { createIndex, diskUse, dropIndex } from './dataset-index.ts';
import { Fts5Tokenizer } from './fts5-tokens.ts';
import { postgresGarbageCollector } from './garbage.ts';
import { migrateVectorStore } from './migrations.ts';
import { neighbours } from './neighbours.ts';
import { ensurePgvector, type PgvectorSupport } from './pgvector.ts';
import { addLaterPieces, chunksWithoutPieces, finishPieces, piecesComplete } from './pieces.ts';
import { candidates, search } from './search.ts';
import { postgresStaging } from './staging.ts';
import { addVectorsOf, filesToEmbed, unembeddedOf } from './vector-progress.ts';

/**
 * The VectorStore on PostgreSQL (cluster mode, issue 26): chunks of every dataset, searchable by vector
 * (pgvector, HNSW, cosine) and keyword (BM25 from postings, computed as FTS5 computes it), in per-dataset
 * tables (dataset-tables.ts); each file's chunks a set of consecutive rows swapped in at once (chunk-sets.ts),
 * replaced and deleted ones hidden at once and deleted in batches in the background (garbage.ts).
 *
 * On a server without pgvector the store indexes and searches keywords; vector and hybrid searches, and
 * writing vectors, fail with PgvectorMissingError (`vectorsMissing` says why, for the dataset view).
 *
 * A facade, like the SQLite store (../sqlite-store.ts): each job is a file of its own, on one connection
 * (connection.ts), one garbage collector and one tokenizer (fts5-tokens.ts, FTS5's own, so both stores
 * index the same terms); phase 1 and the collector run as the SQLite store's (../staging-store.ts).
 */
export class PostgresVectorStore extends StagingVectorStore<ChunkSet> implements VectorStore {
  private readonly connection: PostgresConnection;
  private readonly tokenizer: Fts5Tokenizer;

  private constructor(
    db: Db,
    private readonly pgvector: PgvectorSupport,
    private readonly clock: Clock,
  ) {
    const connection = new PostgresConnection(db);
    const tokenizer = new Fts5Tokenizer();
    const missing = vectorsMissingOf(pgvector);
    super(
      postgresGarbageCollector(connection),
      postgresStaging({ connection, tokenizer, ...(missing ? { vectorsMissing: missing } : {}) }),
    );
    this.connection = connection;
    this.tokenizer = tokenizer;
  }

  /**
   * The store on `db` (whose control tables are migrated: vector_calibrations is one of them): its own tables
   * migrated, pgvector created in the database when the server has it. The `clock` stamps each index's creation.
   */
  static async open(db: Db, clock: Clock = systemClock): Promise<PostgresVectorStore> {
    await migrateVectorStore(db);
    const pgvector = await ensurePgvector(new PostgresConnection(db).query);
    return new PostgresVectorStore(db, pgvector, clock);
  }

  /** Why vectors cannot be stored or searched here (the server lacks pgvector), undefined when they can. */
  get vectorsMissing(): string | undefined {
    return vectorsMissingOf(this.pgvector);
  }

  /** pgvector's version in this database, when there is one. */
  get pgvectorVersion(): string | undefined {
    return this.pgvector.version;
  }

  get longestWriteMs(): number {
    return this.connection.longestWriteMs;
  }

  async createDatasetIndex(datasetId: string, dimension: number, lease?: FencingLease): Promise<void> {
    await createIndex(this.connection, this.garbage, datasetId, dimension, this.vectorsMissing === undefined, this.clock, lease);
  }

  async dropDatasetIndex(datasetId: string): Promise<void> {
    await dropIndex(this.connection, datasetId);
  }

  async diskUse(datasetId: string): Promise<number> {
    return diskUse(this.connection, datasetId);
  }

  async filesToEmbed(datasetId: string): Promise<string[]> {
    return filesToEmbed(this.connection, datasetId);
  }

  async unembeddedOf(
    datasetId: string,
    files: readonly { fileKey: string; from: number | undefined }[],
    limits: ReadLimits,
  ): Promise<(UnembeddedChunks | undefined)[]> {
    return unembeddedOf(this.connection, datasetId, files, limits);
  }

  async addVectorsOf(datasetId: string, parts: readonly VectorPart[]): Promise<(EmbeddingProgress | undefined)[]> {
    return addVectorsOf(this.connection, datasetId, parts, this.vectorsMissing);
  }

  async piecesComplete(datasetId: string): Promise<boolean> {
    return piecesComplete(this.connection, datasetId);
  }

  async chunksWithoutPieces(datasetId: string, after: number, limits: ReadLimits): Promise<{ rowid: number; content: string }[]> {
    return chunksWithoutPieces(this.connection, datasetId, after, limits);
  }

  async addLaterPieces(datasetId: string, chunks: readonly LaterPieces[]): Promise<void> {
    await addLaterPieces(this.connection, datasetId, chunks);
  }

  async finishPieces(datasetId: string, changed: boolean): Promise<void> {
    await finishPieces(this.connection, datasetId, changed);
  }

  async search(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    options: SearchOptions,
  ): Promise<SearchHit[]> {
    return search(this.searching(), datasetId, queryEmbedding, queryText, options);
  }

  async candidates(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    mode: SearchMode,
    limit: number,
    leftOut?: string,
  ): Promise<CandidateSet> {
    return candidates(this.searching(), datasetId, queryEmbedding, queryText, mode, limit, leftOut);
  }

  async neighbours(datasetId: string, chunkIds: readonly string[], radius: number): Promise<Map<string, ChunkNeighbours>> {
    return neighbours(this.connection, datasetId, chunkIds, radius);
  }

  async sampleFiles(datasetId: string, count: number, seed: number): Promise<{ chunkCount: number; files: SampledFile[] }> {
    return sampleFiles(this.connection, this.tokenizer, datasetId, count, seed);
  }

  async saveCalibration(datasetId: string, fitted: FittedCalibration): Promise<void> {
    await saveCalibration(this.connection, datasetId, fitted);
  }

  async fittedCalibrations(datasetIds: readonly string[]): Promise<Map<string, FittedCalibration>> {
    return fittedCalibrations(this.connection, datasetIds);
  }

  /** Stops collecting garbage (staging-store.ts), then closes the tokenizer. */
  override async close(): Promise<void> {
    await super.close();
    this.tokenizer.close();
  }

  private searching() {
    const missing = this.vectorsMissing;
    return { connection: this.connection, tokenizer: this.tokenizer, ...(missing ? { vectorsMissing: missing } : {}) };
  }
}

function vectorsMissingOf(pgvector: PgvectorSupport): string | undefined {
  return pgvector.version === undefined ? (pgvector.missing ?? 'not installed') : undefined;
}
