import type { DatasetRepository } from '../datasets/repository.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRecord } from '../endpoints/codec.ts';
import type { ProviderHealth } from '../llm/provider.ts';

export interface ModelHealth {
  health(tenant: Tenant, modelId: string, signal?: AbortSignal): Promise<ProviderHealth>;
}

const MODEL_CHECK_TIMEOUT_MS = 10_000;

/**
 * Whether an endpoint can answer now, as the heartbeat reports it: its dataset (if any) is running,
 * and its model (if any) says it is healthy. One round checks each model once, however many endpoints share it.
 */
export class EndpointHealth {
  constructor(
    private readonly datasets: DatasetRepository,
    private readonly models: ModelHealth,
  ) {}

  /** A checker for one round: model answers are remembered until the round ends. */
  round(tenant: Tenant): (endpoint: EndpointRecord) => Promise<boolean> {
    const modelChecks = new Map<string, Promise<boolean>>();
    const datasetChecks = new Map<string, Promise<boolean>>();
    return async (endpoint) => {
      const checks: Promise<boolean>[] = [];
      if (endpoint.dataset_id) checks.push(remember(datasetChecks, endpoint.dataset_id, (id) => this.datasetRunning(tenant, id)));
      if (endpoint.model_id) checks.push(remember(modelChecks, endpoint.model_id, (id) => this.modelHealthy(tenant, id)));
      return (await Promise.all(checks)).every(Boolean);
    };
  }

  private async datasetRunning(tenant: Tenant, datasetId: string): Promise<boolean> {
    return (await this.datasets.get(tenant.id, datasetId))?.status === 'running';
  }

  private async modelHealthy(tenant: Tenant, modelId: string): Promise<boolean> {
    try {
      return (await this.models.health(tenant, modelId, AbortSignal.timeout(MODEL_CHECK_TIMEOUT_MS))).healthy;
    } catch {
      return false;
    }
  }
}

function remember(memo: Map<string, Promise<boolean>>, id: string, check: (id: string) => Promise<boolean>): Promise<boolean> {
  let result = memo.get(id);
  if (!result) {
    result = check(id);
    memo.set(id, result);
  }
  return result;
}
