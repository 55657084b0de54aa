import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { UserRepository } from './auth/repository.ts';
import { AuthService } from './auth/service.ts';
import { TokenIssuer } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { DatasetRepository } from './datasets/repository.ts';
import { DatasetSearchService } from './datasets/search.ts';
import { DatasetService } from './datasets/service.ts';
import { type OpenedDatabase, openDatabase } from './db/database.ts';
import { FixedWindows } from './db/fixed-windows.ts';
import { closeEmbedders } from './embeddings/embedder.ts';
import { EndpointRepository } from './endpoints/repository.ts';
import { EndpointService } from './endpoints/service.ts';
import { CredentialGuard } from './http/auth.ts';
import { ApiLimiter } from './http/limits.ts';
import { IngestionEngine } from './ingestion/engine.ts';
import { FileRepository } from './ingestion/files-repository.ts';
import { ParserPool } from './ingestion/parser-pool.ts';
import { LocalModelRegistry } from './llm/llama-cpp.ts';
import { type AccountingService, HttpAccountingService } from './marketplace/accounting.ts';
import { MarketplaceRepository } from './marketplaces/repository.ts';
import { MarketplaceService } from './marketplaces/service.ts';
import { ModelRepository } from './models/repository.ts';
import { ModelRunnerService } from './models/runner.ts';
import { ModelService } from './models/service.ts';
import { PolicyRepository } from './policies/repository.ts';
import { PolicyService } from './policies/service.ts';
import { QueryPipeline } from './query/pipeline.ts';
import { UsageRepository } from './query/usage-repository.ts';
import { loadOrCreateKey } from './security/key-file.ts';
import { SecretBox } from './security/secret-box.ts';
import { SettingsRepository } from './settings/repository.ts';
import { SettingsService } from './settings/service.ts';
import { DEFAULT_TENANT, type Tenant, TenantRepository } from './tenants/repository.ts';
import { TenantService } from './tenants/service.ts';
import { vectorExtensionPath, vectorExtensionVersion } from './vectors/extension.ts';
import { VectorStore } from './vectors/store.ts';

/** Everything the routes need, built once from the configuration; tests build it on a temporary data directory. */
export interface Services {
  readonly config: Config;
  readonly log: Logger;
  readonly database: OpenedDatabase;
  readonly vectorStoreVersion: string;
  readonly guard: CredentialGuard;
  readonly limiter: ApiLimiter;
  readonly auth: AuthService;
  readonly tenants: TenantService;
  readonly datasets: DatasetService;
  readonly ingestion: IngestionEngine;
  readonly models: ModelService;
  readonly modelRunner: ModelRunnerService;
  readonly endpoints: EndpointService;
  readonly endpointRepository: EndpointRepository;
  readonly policies: PolicyService;
  readonly marketplaces: MarketplaceService;
  readonly settings: SettingsService;
  readonly query: QueryPipeline;
  readonly usage: UsageRepository;
  close(): Promise<void>;
}

export async function createServices(config: Config): Promise<Services> {
  const log = pino({ level: config.logLevel, redact: ['req.headers.authorization'] });
  const database = await openDatabase(config.dataDir, [vectorExtensionPath()]);
  const { db } = database;
  const vectorStoreVersion = await database.exclusive(vectorExtensionVersion);
  const box = new SecretBox(loadOrCreateKey(join(config.dataDir, 'secret.key'), 32));
  const tokens = new TokenIssuer(config.jwtSecret ?? loadOrCreateKey(join(config.dataDir, 'jwt.key'), 32));

  const userRepository = new UserRepository(db);
  const tenantRepository = new TenantRepository(db);
  const datasetRepository = new DatasetRepository(db);
  const modelRepository = new ModelRepository(db);
  const endpointRepository = new EndpointRepository(db);
  const policyRepository = new PolicyRepository(db);
  const marketplaceRepository = new MarketplaceRepository(db);
  const usage = new UsageRepository(db);
  const windows = new FixedWindows(database);
  await tenantRepository.ensure(DEFAULT_TENANT);

  const store = new VectorStore(database);
  const files = new FileRepository(db);
  const pool = new ParserPool({ size: 1 });
  const ingestion = new IngestionEngine({ config, datasets: datasetRepository, files, store, pool, box, log });
  const models = new ModelService(modelRepository, box);
  // Loaded GGUF models are shared by every request and given back after 10 idle minutes.
  const localModels = new LocalModelRegistry();
  const modelRunner = new ModelRunnerService(models, localModels);

  /** The accounting service of the tenant's default marketplace, with its password opened for the call. */
  const accountingFor = async (tenant: Tenant): Promise<AccountingService | undefined> => {
    const marketplace = await marketplaceRepository.getDefault(tenant.id);
    if (!marketplace?.accounting_url || !marketplace.accounting_email || !marketplace.accounting_password) return undefined;
    return new HttpAccountingService({
      url: marketplace.accounting_url,
      email: marketplace.accounting_email,
      password: box.decrypt(marketplace.accounting_password),
    });
  };

  const services: Services = {
    config,
    log,
    database,
    vectorStoreVersion,
    guard: new CredentialGuard(config, tokens, userRepository, tenantRepository),
    limiter: new ApiLimiter(config, windows),
    auth: new AuthService(db, userRepository, tenantRepository, tokens),
    tenants: new TenantService(tenantRepository, userRepository),
    datasets: new DatasetService(
      datasetRepository,
      box,
      { ingestionRoots: config.ingestionRoots, defaultEmbedder: config.embedder },
      ingestion,
      files,
    ),
    ingestion,
    models,
    modelRunner,
    endpoints: new EndpointService(endpointRepository, datasetRepository, modelRepository, policyRepository),
    endpointRepository,
    policies: new PolicyService(policyRepository, endpointRepository),
    marketplaces: new MarketplaceService(db, marketplaceRepository, box),
    settings: new SettingsService(new SettingsRepository(db)),
    query: new QueryPipeline({
      config,
      endpoints: endpointRepository,
      policies: policyRepository,
      usage,
      windows,
      search: new DatasetSearchService(config, datasetRepository, store, box, vectorStoreVersion),
      models: modelRunner,
      accountingFor,
      log,
    }),
    usage,
    close: async () => {
      await ingestion.close();
      await pool.close();
      await closeEmbedders();
      await localModels.dispose();
      await database.close();
    },
  };
  // Datasets that were ingesting when knode stopped resume in the background: start-up does not wait.
  void ingestion.resumeAll();
  return services;
}
