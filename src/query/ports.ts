import type { References, SearchOptions } from '../datasets/search.ts';
import type { Tenant } from '../domain/principal.ts';
import type { ChatMessage, ChatOptions } from '../llm/provider.ts';
import type { PricedStreamEvent, Summary } from '../models/runner.ts';

/**
 * What the query pipeline needs of the modules below it. The implementations (datasets/search.ts,
 * models/runner.ts) define the data they answer with; these interfaces let tests and the pipeline
 * depend on the capability, not the class.
 */
export type { PricedStreamEvent, References, SearchOptions, Summary };

/** Searches a dataset: the `references` object of a query, cost included. */
export interface DatasetSearch {
  search(tenant: Tenant, datasetId: string, text: string, options: SearchOptions, signal?: AbortSignal): Promise<References>;
  /** What one search of the dataset costs, and how large its chunks can be (for the cost ceiling). */
  pricing(tenant: Tenant, datasetId: string): Promise<{ costPerQuery: number; chunkSize: number }>;
}

/** Runs a tenant's model: the `summary` object of a query, cost included. */
export interface ModelRunner {
  chat(tenant: Tenant, modelId: string, messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): Promise<Summary>;
  stream(
    tenant: Tenant,
    modelId: string,
    messages: ChatMessage[],
    options: ChatOptions,
    signal?: AbortSignal,
  ): AsyncIterable<PricedStreamEvent>;
  /** The most a generation can cost for a prompt of `promptTokens` and up to `maxTokens`. */
  maxCost(tenant: Tenant, modelId: string, promptTokens: number, maxTokens: number): Promise<number>;
}
