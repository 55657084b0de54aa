import { basename } from 'node:path';
import type { Static } from 'typebox';
import type { Tenant } from '../domain/principal.ts';
import { maxGenerationCost, modelPrices, usageCost } from '../llm/costs.ts';
import { DEFAULT_MAX_CONTEXT_SIZE, type LocalModelRegistry } from '../llm/llama-cpp/model-registry.ts';
import { type ChatMessage, type ChatOptions, newCompletionId, type ProviderHealth, type StreamEvent } from '../llm/provider.ts';
import { createProvider } from '../llm/registry.ts';
import { ONE_MEGABYTE, outboundFetch } from '../outbound/fetch.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import type { ModelSettings } from './codec.ts';
import type { SummaryView } from './schemas.ts';
import type { ModelService } from './service.ts';

export type Summary = Static<typeof SummaryView>;

/** Longer than any model's timeout_ms is sensibly set to. */
const HEADERS_TIMEOUT_MS = 10 * 60_000;

/**
 * A model stream as the query pipeline sees it: first who answers (`start`), then text deltas, then
 * `done` with usage and the cost of the generation.
 */
export type PricedStreamEvent =
  | { type: 'start'; id: string; model: string }
  | Extract<StreamEvent, { type: 'delta' }>
  | (Extract<StreamEvent, { type: 'done' }> & { cost: number });

/**
 * Runs a tenant's models. The configuration is opened (API key decrypted) for each call only; a model
 * failure is a ModelError naming the model (an upstream failure, or a timeout).
 */
export class ModelRunnerService {
  constructor(
    private readonly models: ModelService,
    private readonly localModels: LocalModelRegistry,
    /** Every call to a model server goes through the outbound module, with what the model's tenant may reach. */
    private readonly outbound: OutboundPolicy,
  ) {}

  async chat(tenant: Tenant, modelId: string, messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): Promise<Summary> {
    const { provider, configuration } = await this.provider(tenant, modelId);
    const summary = await provider.chat(messages, options, signal);
    return { ...summary, cost: usageCost(summary.usage, modelPrices(configuration)) };
  }

  async *stream(
    tenant: Tenant,
    modelId: string,
    messages: ChatMessage[],
    options: ChatOptions,
    signal?: AbortSignal,
  ): AsyncGenerator<PricedStreamEvent> {
    const { provider, configuration, settings } = await this.provider(tenant, modelId);
    yield { type: 'start', id: newCompletionId(), model: modelName(settings) };
    for await (const event of provider.stream(messages, options, signal)) {
      yield event.type === 'done' ? { ...event, cost: usageCost(event.usage, modelPrices(configuration)) } : event;
    }
  }

  /**
   * The tokens a local model's context holds: its `context_size`, else the most knode's loader gives it
   * (0 or absent: as large as memory allows, up to DEFAULT_MAX_CONTEXT_SIZE). A server's model: unknown.
   */
  async contextWindow(tenant: Tenant, modelId: string): Promise<number | undefined> {
    const settings = await this.models.openConfiguration(tenant, modelId);
    if (settings.dtype !== 'llama_cpp') return undefined;
    return settings.configuration.context_size || DEFAULT_MAX_CONTEXT_SIZE;
  }

  async maxCost(tenant: Tenant, modelId: string, promptTokens: number, maxTokens: number): Promise<number> {
    const { configuration } = await this.models.openConfiguration(tenant, modelId);
    return maxGenerationCost(promptTokens, maxTokens, modelPrices(configuration));
  }

  async health(tenant: Tenant, modelId: string, signal?: AbortSignal): Promise<ProviderHealth> {
    const { provider } = await this.provider(tenant, modelId);
    return provider.health(signal);
  }

  private async provider(tenant: Tenant, modelId: string) {
    const settings = await this.models.openConfiguration(tenant, modelId);
    const { configuration } = settings;
    const fetch = outboundFetch(await this.outbound.forTenant(tenant.id), {
      // A long streamed answer is many small events: 16 MB, where an error answer still stops at 1 MB.
      maxBytes: 16 * ONE_MEGABYTE,
      // The provider's own deadline (the model's timeout_ms) decides; this only stops a server that never answers.
      timeoutMs: HEADERS_TIMEOUT_MS,
    });
    return { provider: createProvider(settings, { localModels: this.localModels, fetch }), configuration, settings };
  }
}

/** What the answer's `model` says before the server names it: the configured model or the GGUF file name. */
function modelName(settings: ModelSettings): string {
  return settings.dtype === 'openai' ? settings.configuration.model : basename(settings.configuration.model_path);
}
