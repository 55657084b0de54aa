import { join } from 'node:path';
import { UserRepository } from './auth/repository.ts';
import { AuthService } from './auth/service.ts';
import { TokenIssuer } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { DatasetRepository } from './datasets/repository.ts';
import { DatasetService } from './datasets/service.ts';
import { type OpenedDatabase, openDatabase } from './db/database.ts';
import { FixedWindows } from './db/fixed-windows.ts';
import { EndpointRepository } from './endpoints/repository.ts';
import { EndpointService } from './endpoints/service.ts';
import { CredentialGuard } from './http/auth.ts';
import { ApiLimiter } from './http/limits.ts';
import { MarketplaceRepository } from './marketplaces/repository.ts';
import { MarketplaceService } from './marketplaces/service.ts';
import { ModelRepository } from './models/repository.ts';
import { ModelRunnerService } from './models/runner.ts';
import { ModelService } from './models/service.ts';
import { LocalModelRegistry } from './llm/llama-cpp.ts';
import { PolicyRepository } from './policies/repository.ts';
import { PolicyService } from './policies/service.ts';
import { loadOrCreateKey } from './security/key-file.ts';
import { SecretBox } from './security/secret-box.ts';
import { SettingsRepository } from './settings/repository.ts';
import { SettingsService } from './settings/service.ts';
import { DEFAULT_TENANT, TenantRepository } from './tenants/repository.ts';
import { TenantService } from './tenants/service.ts';

/** Everything the routes need, built once from the configuration; tests build it on a temporary data directory. */
export interface Services {
  readonly config: Config;
  readonly database: OpenedDatabase;
  readonly guard: CredentialGuard;
  readonly limiter: ApiLimiter;
  readonly auth: AuthService;
  readonly tenants: TenantService;
  readonly datasets: DatasetService;
  readonly models: ModelService;
  readonly modelRunner: ModelRunnerService;
  readonly endpoints: EndpointService;
  readonly policies: PolicyService;
  readonly marketplaces: MarketplaceService;
  readonly settings: SettingsService;
  close(): Promise<void>;
}

export async function createServices(config: Config): Promise<Services> {
  const database = await openDatabase(config.dataDir);
  const { db } = database;
  const box = new SecretBox(loadOrCreateKey(join(config.dataDir, 'secret.key'), 32));
  const tokens = new TokenIssuer(config.jwtSecret ?? loadOrCreateKey(join(config.dataDir, 'jwt.key'), 32));

  const userRepository = new UserRepository(db);
  const tenantRepository = new TenantRepository(db);
  const datasetRepository = new DatasetRepository(db);
  const modelRepository = new ModelRepository(db);
  const endpointRepository = new EndpointRepository(db);
  const policyRepository = new PolicyRepository(db);
  await tenantRepository.ensure(DEFAULT_TENANT);
  const models = new ModelService(modelRepository, box);
  // Loaded GGUF models are shared by every request and given back after 10 idle minutes.
  const localModels = new LocalModelRegistry();

  return {
    config,
    database,
    guard: new CredentialGuard(config, tokens, userRepository, tenantRepository),
    limiter: new ApiLimiter(config, new FixedWindows(database)),
    auth: new AuthService(db, userRepository, tenantRepository, tokens),
    tenants: new TenantService(tenantRepository, userRepository),
    datasets: new DatasetService(datasetRepository, box, { ingestionRoots: config.ingestionRoots, defaultEmbedder: config.embedder }),
    models,
    modelRunner: new ModelRunnerService(models, localModels),
    endpoints: new EndpointService(endpointRepository, datasetRepository, modelRepository, policyRepository),
    policies: new PolicyService(policyRepository, endpointRepository),
    marketplaces: new MarketplaceService(db, new MarketplaceRepository(db), box),
    settings: new SettingsService(new SettingsRepository(db)),
    close: async () => {
      await localModels.dispose();
      await database.close();
    },
  };
}
