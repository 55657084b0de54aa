import type { Static } from 'typebox';
import type { Config } from '../config.ts';
import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import { datasetEmbedder } from '../embeddings/embedder.ts';
import { VectorIndexMissingError, type VectorStore } from '../vectors/store.ts';
import type { DatasetConfiguration } from './codec.ts';
import type { DatasetRepository } from './repository.ts';
import type { ReferencesView } from './schemas.ts';

export type References = Static<typeof ReferencesView>;

export interface SearchOptions {
  similarityThreshold: number;
  limit: number;
  includeMetadata: boolean;
  mode: 'hybrid' | 'vector' | 'keyword';
}

/** The search step of a query: embeds the text with the dataset's own embedder and asks the vector store. */
export class DatasetSearchService {
  constructor(
    private readonly config: Config,
    private readonly datasets: DatasetRepository,
    private readonly store: VectorStore,
    private readonly storeVersion: string,
  ) {}

  async search(tenant: Tenant, datasetId: string, text: string, options: SearchOptions, signal?: AbortSignal): Promise<References> {
    const started = performance.now();
    const configuration = await this.configuration(tenant, datasetId);
    const providerInfo = { search_engine: `sqlite-vec ${this.storeVersion} + FTS5`, mode: options.mode, embedder: configuration.embedder };
    const embedder = await datasetEmbedder(configuration, { dataDir: this.config.dataDir, allowDownload: this.config.allowModelDownload });
    const [vector] = await embedder.embed([text], signal);
    let documents: References['documents'] = [];
    try {
      documents = (await this.store.search(datasetId, vector as Float32Array, text, options)).map((hit) => ({ ...hit }));
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
