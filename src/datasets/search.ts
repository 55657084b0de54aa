import type { Static } from 'typebox';
import type { Config } from '../config.ts';
import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import { datasetEmbedder, type EmbedderOutbound } from '../embeddings/embedder.ts';
import { queryVector } from '../embeddings/query-vectors.ts';
import { calibrationFor } from '../vectors/calibration.ts';
import { RANKING } from '../vectors/ranking.ts';
import { fitIsCurrent } from '../vectors/self-calibration.ts';
import { type ChunkNeighbours, type SearchEngine, searchEngineName, VectorIndexMissingError, type VectorStore } from '../vectors/store.ts';
import type { DatasetConfiguration } from './codec.ts';
import type { DatasetRepository } from './repository.ts';
import type { ReferencesView } from './schemas.ts';

export type References = Static<typeof ReferencesView>;

/** What an answer's context shows of passages besides their text and metadata (query/answer-context.ts). */
export interface PassageSurroundings {
  /** The chunks on either side of each passage in its file, by chunk id (`document_id`); one no longer visible is absent. */
  readonly neighbours: Map<string, ChunkNeighbours>;
  /** Characters a chunk repeats of the one before it, at most (ingestion/chunker.ts). */
  readonly chunkOverlap: number;
  /** The modification time of each passage's file (ms since the epoch), by its path (`source`); a feed's items date themselves. */
  readonly modified: Map<string, number>;
}

export interface SearchOptions {
  similarityThreshold: number;
  limit: number;
  includeMetadata: boolean;
  mode: 'hybrid' | 'vector' | 'keyword';
}

/**
 * The search step of a query: embeds the text with the dataset's own embedder (not in keyword mode,
 * which never waits for a model) and asks the vector store, with the calibration of that embedder.
 */
export class DatasetSearchService {
  constructor(
    private readonly config: Config,
    private readonly datasets: DatasetRepository,
    private readonly store: VectorStore,
    private readonly engine: SearchEngine,
    /** The outbound module's fetch for a tenant, which an `openai:` embedder is called through (outbound/). */
    private readonly outbound: EmbedderOutbound,
  ) {}

  async search(tenant: Tenant, datasetId: string, text: string, options: SearchOptions, signal?: AbortSignal): Promise<References> {
    const started = performance.now();
    const configuration = await this.configuration(tenant, datasetId);
    // The dataset's own calibration while it rescales what is shipped for its embedder (datasets/calibrator.ts):
    // after an upgrade of the constants, the shipped ones until it is fitted again.
    const fitted = (await this.store.fittedCalibrations([datasetId]).catch(() => new Map())).get(datasetId.toLowerCase());
    const shipped = calibrationFor(configuration.embedder);
    const calibration = fitted && fitIsCurrent(fitted, configuration.embedder, shipped) ? fitted.calibration : shipped;
    const providerInfo = {
      search_engine: searchEngineName(this.engine),
      mode: options.mode,
      embedder: configuration.embedder,
      ranking: RANKING,
      calibration: calibration.name,
    };
    const vector = options.mode === 'keyword' ? undefined : await this.queryVector(tenant, configuration, text, signal);
    let documents: References['documents'] = [];
    try {
      documents = (await this.store.search(datasetId, vector, text, { ...options, calibration })).map((hit) => ({ ...hit }));
    } catch (error) {
      // A dataset that has not finished starting has no index yet: nothing to find, not a failure.
      if (!(error instanceof VectorIndexMissingError)) throw error;
    }
    return {
      documents,
      provider_info: { ...providerInfo, response_time_ms: Math.round((performance.now() - started) * 100) / 100 },
      cost: configuration.cost_per_query,
    };
  }

  private async queryVector(
    tenant: Tenant,
    configuration: DatasetConfiguration,
    text: string,
    signal?: AbortSignal,
  ): Promise<Float32Array> {
    const embedder = await datasetEmbedder(configuration, {
      dataDir: this.config.dataDir,
      allowDownload: this.config.allowModelDownload,
      outbound: await this.outbound(tenant.id),
    });
    return queryVector(embedder, text, signal);
  }

  /**
   * The chunk just before and just after each of the passages in its file, and the dates of their files (a
   * folder's: its scan's modification time; a feed item's date is in its metadata), for an answer's context.
   */
  async surroundings(tenant: Tenant, datasetId: string, passages: References['documents']): Promise<PassageSurroundings> {
    const dataset = await this.datasets.get(tenant.id, datasetId);
    if (!dataset) throw new NotFoundError(`Dataset '${datasetId}' not found`);
    const ids = passages.map((passage) => passage.document_id);
    const neighbours = await this.store.neighbours(datasetId, ids, 1).catch((error: unknown) => {
      if (error instanceof VectorIndexMissingError) return new Map<string, ChunkNeighbours>();
      throw error;
    });
    const paths = passages.flatMap((passage) => (typeof passage.metadata.source === 'string' ? [passage.metadata.source] : []));
    const modified = dataset.dtype === 'local_file' ? await this.datasets.modifiedTimes(dataset.id, paths) : new Map<string, number>();
    return { neighbours, chunkOverlap: dataset.configuration.chunkOverlap, modified };
  }

  async pricing(tenant: Tenant, datasetId: string): Promise<{ costPerQuery: number; chunkSize: number }> {
    const configuration = await this.configuration(tenant, datasetId);
    return { costPerQuery: configuration.cost_per_query, chunkSize: configuration.chunkSize };
  }

  private async configuration(tenant: Tenant, datasetId: string): Promise<DatasetConfiguration> {
    const dataset = await this.datasets.get(tenant.id, datasetId);
    if (!dataset) throw new NotFoundError(`Dataset '${datasetId}' not found`);
    return dataset.configuration;
  }
}
