import type { Static } from 'typebox';
import type { ChatMessage, ChatOptions, StreamEvent } from '../llm/provider.ts';
import type { Tenant } from '../tenants/repository.ts';
import type { ReferencesView, SummaryView } from './schemas.ts';

export type References = Static<typeof ReferencesView>;
export type Summary = Static<typeof SummaryView>;

export interface SearchOptions {
  similarityThreshold: number;
  limit: number;
  includeMetadata: boolean;
  mode: 'hybrid' | 'vector' | 'keyword';
}

/** Searches a dataset: the `references` object of a query, cost included. */
export interface DatasetSearch {
  search(tenant: Tenant, datasetId: string, text: string, options: SearchOptions, signal?: AbortSignal): Promise<References>;
  /** What one search of the dataset costs, and how large its chunks can be (for the cost ceiling). */
  pricing(tenant: Tenant, datasetId: string): Promise<{ costPerQuery: number; chunkSize: number }>;
}

/**
 * A model stream as the query pipeline sees it: first who answers (`start`), then text deltas, then
 * `done` with usage and the cost of the generation.
 */
export type PricedStreamEvent =
  | { type: 'start'; id: string; model: string }
  | Extract<StreamEvent, { type: 'delta' }>
  | (Extract<StreamEvent, { type: 'done' }> & { cost: number });

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
