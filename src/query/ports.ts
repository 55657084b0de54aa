import type { PassageSurroundings, References, SearchOptions } from '../datasets/search.ts';
import type { Tenant } from '../domain/principal.ts';
import type { ChatMessage, ChatOptions } from '../llm/provider.ts';
import type { PricedStreamEvent, Summary } from '../models/runner.ts';

/**
 * What the query pipeline needs of the modules below it. The implementations (datasets/search.ts,
 * models/runner.ts) define the data they answer with; these interfaces let tests and the pipeline
 * depend on the capability, not the class.
 */
export type { PassageSurroundings, References, Summary };

/** Searches a dataset: the `references` object of a query, cost included. */
export interface DatasetSearch {
  search(tenant: Tenant, datasetId: string, text: string, options: SearchOptions, signal?: AbortSignal): Promise<References>;
  /** What an answer's context shows around the passages: the chunk before and after each in its file, their files' dates. */
  surroundings(tenant: Tenant, datasetId: string, passages: References['documents']): Promise<PassageSurroundings>;
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
  /** How many tokens the model's context holds, when its configuration says (a local model's `context_size`). */
  contextWindow(tenant: Tenant, modelId: string): Promise<number | undefined>;
  /** The most a generation can cost for a prompt of `promptTokens` and up to `maxTokens`. */
  maxCost(tenant: Tenant, modelId: string, promptTokens: number, maxTokens: number): Promise<number>;
}
