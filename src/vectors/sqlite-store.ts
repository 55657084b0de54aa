import type { OpenedDatabase } from '../db/database.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import type { ChunkSet } from './chunk-sets.ts';
import type { SearchMode } from './ranking.ts';
import type { FittedCalibration, SampledFile } from './self-calibration.ts';
import { fittedCalibrations, sampleFiles, saveCalibration } from './sqlite-calibrations.ts';
import { StoreConnection } from './sqlite-connection.ts';
import { sqliteGarbageCollector } from './sqlite-garbage.ts';
import { createIndex, diskUse, dropIndex } from './sqlite-index.ts';
import { neighbours } from './sqlite-neighbours.ts';
import { addLaterPieces, chunksWithoutPieces, finishPieces, piecesComplete } from './sqlite-pieces.ts';
import { candidates, search } from './sqlite-search.ts';
import { sqliteStaging } from './sqlite-staging.ts';
import { addVectorsOf, filesToEmbed, unembeddedOf } from './sqlite-vector-progress.ts';
import { StagingVectorStore } from './staging-store.ts';
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
} from './store.ts';

/**
 * The VectorStore on SQLite: chunks of every dataset, searchable by vector (sqlite-vec `vec0`, cosine) and
 * keyword (FTS5, BM25), in the one database. Per dataset: one vec0 table and one contentless FTS5 table
 * (tables.ts), rows in the shared `vector_chunks` table, the three sharing a rowid; each file's chunks a set
 * of consecutive rows (`vector_sets`, chunk-sets.ts) swapped in at once, replaced and deleted ones hidden at
 * once and deleted in batches in the background.
 *
 * A facade: each job is a file of its own, on the one connection (sqlite-connection.ts): a dataset's index
 * (sqlite-index.ts), phase 1's staged writes (sqlite-staging.ts) and the garbage collector (sqlite-garbage.ts),
 * both run as PostgreSQL's are (staging-store.ts, file-staging.ts, garbage-collector.ts), phase 2's vectors
 * (sqlite-vector-progress.ts), search (sqlite-search.ts), a chunk's neighbours in its file
 * (sqlite-neighbours.ts) and a dataset's own calibration (sqlite-calibrations.ts).
 */
export class SqliteVectorStore extends StagingVectorStore<ChunkSet> implements VectorStore {
  private readonly connection: StoreConnection;

  /** The `clock` stamps each index's creation. */
  constructor(
    opened: OpenedDatabase,
    private readonly clock: Clock = systemClock,
  ) {
    const connection = new StoreConnection(opened);
    super(sqliteGarbageCollector(connection), sqliteStaging(connection));
    this.connection = connection;
  }

  get longestWriteMs(): number {
    return this.connection.longestWriteMs;
  }

  async createDatasetIndex(datasetId: string, dimension: number, lease?: FencingLease): Promise<void> {
    await createIndex(this.connection, this.garbage, datasetId, dimension, this.clock, lease);
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
    return addVectorsOf(this.connection, datasetId, parts);
  }

  async piecesComplete(datasetId: string): Promise<boolean> {
    return piecesComplete(this.connection, datasetId);
  }

  async chunksWithoutPieces(datasetId: string, after: number, limits: ReadLimits): Promise<{ rowid: number; content: string }[]> {
    return chunksWithoutPieces(this.connection, datasetId, after, limits);
  }

  async addLaterPieces(_datasetId: string, chunks: readonly LaterPieces[]): Promise<void> {
    // Row ids are unique across the datasets of the one database.
    await addLaterPieces(this.connection, chunks);
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
    return search(this.connection, datasetId, queryEmbedding, queryText, options);
  }

  async candidates(
    datasetId: string,
    queryEmbedding: Float32Array | undefined,
    queryText: string,
    mode: SearchMode,
    limit: number,
    leftOut?: string,
  ): Promise<CandidateSet> {
    return candidates(this.connection, datasetId, queryEmbedding, queryText, mode, limit, leftOut);
  }

  async neighbours(datasetId: string, chunkIds: readonly string[], radius: number): Promise<Map<string, ChunkNeighbours>> {
    return neighbours(this.connection, datasetId, chunkIds, radius);
  }

  async sampleFiles(datasetId: string, count: number, seed: number): Promise<{ chunkCount: number; files: SampledFile[] }> {
    return sampleFiles(this.connection, datasetId, count, seed);
  }

  async saveCalibration(datasetId: string, fitted: FittedCalibration): Promise<void> {
    await saveCalibration(this.connection, datasetId, fitted);
  }

  async fittedCalibrations(datasetIds: readonly string[]): Promise<Map<string, FittedCalibration>> {
    return fittedCalibrations(this.connection, datasetIds);
  }
}
