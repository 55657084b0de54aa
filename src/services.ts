import type { DestinationStream, Logger } from 'pino';
import { AnalyticsRepository } from './analytics/repository.ts';
import { AnalyticsService } from './analytics/service.ts';
import { FailedAuthLimiter } from './auth/failed-attempts.ts';
import { CredentialGuard } from './auth/guard.ts';
import { AuthService } from './auth/service.ts';
import { announceMarketplace, type Coordination, marketplaceSubscriber, openCoordination } from './cluster.ts';
import type { Config } from './config.ts';
import { ClusterWork, SINGLETON } from './coordination/cluster-work.ts';
import { LeasedDatasets } from './coordination/dataset-leases.ts';
import { PostgresEmbeddingWindows } from './coordination/postgres/embedding-windows.ts';
import { keepReplicaAlive } from './coordination/replica-liveness.ts';
import { LeasedTunnels } from './coordination/tunnel-leases.ts';
import { DatasetCalibrator } from './datasets/calibrator.ts';
import { DatasetRepository } from './datasets/repository.ts';
import { DatasetSearchService } from './datasets/search.ts';
import { DatasetSelectionService } from './datasets/selection-service.ts';
import { DatasetService } from './datasets/service.ts';
import { StorageService } from './datasets/storage-service.ts';
import type { OpenedDatabase } from './db/database.ts';
import { DEFAULT_TENANT } from './domain/principal.ts';
import { closeEmbedders, datasetEmbedder } from './embeddings/embedder.ts';
import { setUseLiteWarningListener } from './embeddings/use-lite.ts';
import { EndpointRepository } from './endpoints/repository.ts';
import { EndpointService } from './endpoints/service.ts';
import { FeedRepository } from './feeds/feed-repository.ts';
import { FeedSources } from './feeds/feed-source.ts';
import { isDevelopmentMode } from './http/development-mode.ts';
import { RequestGuard } from './http/request-guard.ts';
import type { SharedWindows } from './ingestion/embedding-phase.ts';
import { IngestionEngine } from './ingestion/engine.ts';
import { FileRepository } from './ingestion/files-repository.ts';
import { ParserPool } from './ingestion/parser-pool.ts';
import { LocalModelRegistry } from './llm/llama-cpp/model-registry.ts';
import { createLogger } from './logging.ts';
import { MarketplaceRepository } from './marketplaces/repository.ts';
import { MarketplaceService } from './marketplaces/service.ts';
import { Metrics } from './metrics/metrics.ts';
import { ModelRepository } from './models/repository.ts';
import { ModelRunnerService } from './models/runner.ts';
import { ModelService } from './models/service.ts';
import { ONE_MEGABYTE, outboundFetch } from './outbound/fetch.ts';
import { OutboundPolicy, Reach } from './outbound/reach.ts';
import { ConsumedStore } from './payments/consumed-store.ts';
import { MppGateway } from './payments/mpp.ts';
import { SettlementReconciler } from './payments/reconciler.ts';
import { WalletRepository } from './payments/repository.ts';
import { WalletService } from './payments/service.ts';
import { SettlementJournal } from './payments/settlement-journal.ts';
import { GeneralLimits } from './policies/general-limits.ts';
import { PolicyHooks } from './policies/hook-set.ts';
import { PolicyRepository } from './policies/repository.ts';
import { PolicyService } from './policies/service.ts';
import { PublishingTasks } from './publishing/background.ts';
import { EndpointHealth } from './publishing/endpoint-health.ts';
import { HEARTBEAT_INTERVAL_MS } from './publishing/heartbeat.ts';
import type { MarketplaceStatusDeps } from './publishing/marketplace-status.ts';
import { PublicUrlService } from './publishing/public-url.ts';
import { SatelliteRegistry } from './publishing/satellites.ts';
import { PublishingService } from './publishing/service.ts';
import { TenantSettingsRepository } from './publishing/settings-repository.ts';
import { tunnelAdapter } from './publishing/tunnel-adapter.ts';
import { QueryPipeline } from './query/pipeline.ts';
import { UsageRepository } from './query/usage-repository.ts';
import { UsageService } from './query/usage-service.ts';
import type { PasswordHashCost } from './security/passwords.ts';
import { openState } from './state.ts';
import { HubClients } from './syfthub/hub-client.ts';
import { HUB_TIMEOUT_MS } from './syfthub/hub-session.ts';
import { HubSatelliteVerifier } from './syfthub/satellite.ts';
import { IngestionRoots } from './tenants/ingestion-roots.ts';
import { TenantRepository } from './tenants/repository.ts';
import { TenantService } from './tenants/service.ts';
import { UserRepository } from './tenants/users-repository.ts';
import { TUNNEL_BACKOFF, TunnelManager } from './tunnel/manager.ts';
import { NgrokTunnelProvider } from './tunnel/ngrok.ts';
import type { TunnelProvider } from './tunnel/provider.ts';
import { type Clock, systemClock } from './util/clock.ts';
import type { SearchEngine, VectorStore } from './vectors/store.ts';

/*
 * The wiring: every service constructed from the configuration, and only constructed (one job; long because
 * knode has many services, each built in a line or a few). Where the state lives is state.ts; how replicas
 * coordinate, cluster.ts.
 */

/** Everything the routes need, built once from the configuration; tests build it on a temporary data directory. */
export interface Services {
  readonly config: Config;
  readonly log: Logger;
  /**
   * The control database. With SQLite, the embedded database (its `exclusive` runs work on the one
   * connection); in cluster mode (SVC_DATABASE_URL), PostgreSQL's `db`, and `exclusive` refuses: there is
   * no SQLite connection, and only the SQLite counters and store ask for one.
   */
  readonly database: OpenedDatabase;
  readonly searchEngine: SearchEngine;
  /** The per-dataset vector store (tests read what it holds). */
  readonly vectorStore: VectorStore;
  readonly guard: CredentialGuard;
  /** Host, content type and Origin checks that come before credentials. */
  readonly requestGuard: RequestGuard;
  /** Prometheus metrics (GET /metrics). */
  readonly metrics: Metrics;
  /** What GET /settings/storage reads. */
  readonly storage: StorageService;
  /** What GET /marketplaces/{id}/status reads. */
  readonly marketplaceStatus: MarketplaceStatusDeps;
  /** The general API limits, of management requests and of queries to endpoints without rate_limit policies. */
  readonly limits: GeneralLimits;
  readonly failedAuth: FailedAuthLimiter;
  readonly auth: AuthService;
  readonly tenants: TenantService;
  readonly datasets: DatasetService;
  /** A local_file dataset's files and folders (its selection); changes reach this replica's engine. */
  readonly selections: DatasetSelectionService;
  readonly ingestion: IngestionEngine;
  /** Which replica ingests each dataset (its lease), in front of the engine: what the datasets service calls. */
  readonly datasetLeases: LeasedDatasets;
  /** The leases this replica asks for, and the change log it hears other replicas through (one node's, on SQLite). */
  readonly coordination: Coordination;
  /** The single-instance work under its leases (heartbeats, reconciler, calibrator, tunnels). */
  readonly clusterWork: ClusterWork;
  readonly models: ModelService;
  readonly modelRunner: ModelRunnerService;
  readonly endpoints: EndpointService;
  readonly policies: PolicyService;
  readonly marketplaces: MarketplaceService;
  readonly publishing: PublishingService;
  /** One hub session per marketplace, shared by everything that talks to marketplaces. */
  readonly hubs: HubClients;
  /** Start-up public URL and sync, and the health heartbeats. */
  readonly publishingTasks: PublishingTasks;
  readonly publicUrl: PublicUrlService;
  readonly tunnels: TunnelManager;
  readonly query: QueryPipeline;
  readonly usage: UsageService;
  /** Tenant-wide analytics (GET /analytics/...), and the terms of the questions asked for its word cloud. */
  readonly analytics: AnalyticsService;
  /** The tenant's payment wallet (`/settings/wallet`). */
  readonly wallets: WalletService;
  /** MPP payments of queries: challenges, credentials, their broadcast once the answer is ready. */
  readonly payments: MppGateway;
  /** Finishes payments whose receipt came late or whose process stopped (the settlement journal). */
  readonly settlements: SettlementReconciler;
  /** Which folders each tenant may index (the console's folder browser lists inside them). */
  readonly ingestionRoots: IngestionRoots;
  /** The search step of queries, also searched directly by `POST /datasets/{id}/search`. */
  readonly datasetSearch: DatasetSearchService;
  /** Fits each dataset's own calibration (datasets/calibrator.ts); tests call its `check`. */
  readonly calibrator: DatasetCalibrator;
  /** What each tenant's (and the operator's) calls to other servers may reach; every such call goes through it. */
  readonly outbound: OutboundPolicy;
  close(): Promise<void>;
}

/** Knobs that are not configuration: tests move the clock and read the log. */
export interface ServiceOptions {
  /** The time of windows, heartbeats, backoffs and login pauses: the real one unless a test moves it by hand. */
  clock?: Clock;
  /** How soon an unknown `kid` may refetch a hub's key set (30 s unless a test rotates keys). */
  jwksCooldownMs?: number;
  /** Where log lines go: standard output unless a test collects them. */
  logDestination?: DestinationStream;
  /** The tunnel service: ngrok unless a test brings its double (null: none can be loaded). */
  tunnelProvider?: TunnelProvider | null;
  /** How long a paid answer waits for its payment's receipt before it goes out `pending` (10 s unless a test is in a hurry). */
  paymentReceiptTimeoutMs?: number;
  /** The authority a local https feed server's certificate is trusted through (tests only: feeds are https, always). */
  feedTls?: { ca: string };
  /** Argon2id's cost for new passwords: OWASP's (PASSWORD_HASH_COST) unless a test lowers it; never configurable. */
  passwordHashCost?: PasswordHashCost;
}

export async function createServices(config: Config, options: ServiceOptions = {}): Promise<Services> {
  const log = createLogger(config, options.logDestination);
  // The embedder is shared by the process: its one warning (USE-lite fell back to tfjs) goes to the last log.
  setUseLiteWarningListener((message) => log.warn(message));
  const clock = options.clock ?? systemClock;
  const state = await openState(config, clock);
  const { database, windows, store, searchEngine, box, tokens } = state;
  const { db } = database;
  const coordination = openCoordination(config, state, log);
  const { leases, changes } = coordination;
  const clusterWork = new ClusterWork(leases, log);
  // Held before anything is recorded under this replica's id, so no other replica takes its rows for a dead one's.
  const alive = await keepReplicaAlive(leases, (error) => log.warn({ err: error }, 'the liveness lease of this replica could not be held'));

  const userRepository = new UserRepository(db, clock);
  const tenantRepository = new TenantRepository(db, clock);
  const datasetRepository = new DatasetRepository(db, box, clock);
  const modelRepository = new ModelRepository(db, box);
  const endpointRepository = new EndpointRepository(db);
  const policyRepository = new PolicyRepository(db);
  const marketplaceRepository = new MarketplaceRepository(db);
  const usageRepository = new UsageRepository(db);
  const limits = new GeneralLimits(config, windows);
  await tenantRepository.ensure(DEFAULT_TENANT);

  const ingestionRoots = new IngestionRoots(tenantRepository, {
    configured: config.ingestionRoots,
    developmentMode: isDevelopmentMode(config),
  });
  // Loopback and private addresses are the first owner's, as SVC_INGESTION_ROOTS is (API-CONTRACT 2).
  const outbound = new OutboundPolicy(config.outboundAllow, ingestionRoots);
  const tenantFetch = async (tenantId: string | undefined) =>
    outboundFetch(tenantId === undefined ? new Reach(false, config.outboundAllow) : await outbound.forTenant(tenantId));
  // An embedding server answers 64 vectors of up to a few thousand numbers at once: 32 MB, never more.
  const embedderFetch = async (tenantId: string) => {
    const reach = await outbound.forTenant(tenantId);
    return { fetch: outboundFetch(reach, { maxBytes: 32 * ONE_MEGABYTE, timeoutMs: 60_000 }), scope: reach.scope };
  };
  const files = new FileRepository(db, clock);
  // Read at scrape time: `tunnels` is made below, and a scrape comes only once the server listens.
  const metrics = new Metrics({ filesByStatus: () => files.countByStatus(), tunnelStates: () => tunnels.states() }, clock);
  const pool = new ParserPool({ size: 1 });
  const feedRepository = new FeedRepository(db);
  const feedSources = new FeedSources({
    repository: feedRepository,
    outbound,
    clock,
    log,
    ...(options.feedTls ? { tls: options.feedTls } : {}),
  });
  // Cluster mode: every replica with a dataset's embedder embeds windows of its chunks (ingestion/shared-embedding.ts);
  // the replica holding the dataset's lease (`holds`, known once datasetLeases is made below) sets the embedder's probe.
  const leaseHolder = { holds: (_datasetId: string) => false };
  // Without pgvector no vector is written anywhere: each holder's lane then embeds and fails as on one node.
  const sharedEmbedding: SharedWindows | undefined =
    coordination.shared && searchEngine.vectorsMissing === undefined
      ? {
          windows: new PostgresEmbeddingWindows(db, {
            claimer: leases.holder,
            ...(config.leaseTtlMs !== undefined ? { ttlMs: config.leaseTtlMs } : {}),
          }),
          db,
          datasets: async () => (await datasetRepository.listActive()).filter((row) => row.status === 'running').map((row) => row.id),
          embedderOf: async (datasetId) => {
            const record = await datasetRepository.getAnyTenant(datasetId);
            if (!record) throw new Error(`dataset ${datasetId} is gone`);
            return datasetEmbedder(record.configuration, {
              dataDir: config.dataDir,
              allowDownload: config.allowModelDownload,
              outbound: await embedderFetch(record.tenant_id),
            });
          },
          holds: (datasetId) => leaseHolder.holds(datasetId),
        }
      : undefined;
  const ingestion = new IngestionEngine({
    config,
    datasets: datasetRepository,
    files,
    store,
    pool,
    log,
    roots: ingestionRoots,
    onEmbedded: (chunks) => metrics.chunksEmbedded(chunks),
    outbound: embedderFetch,
    keyed: feedSources,
    ...(sharedEmbedding ? { sharedEmbedding } : {}),
    clock,
  });
  const models = new ModelService(modelRepository, ingestionRoots, clock, config.tenantQuotas.models, outbound);
  // Loaded GGUF models are shared by every request and given back after 10 idle minutes.
  const localModels = new LocalModelRegistry();
  const modelRunner = new ModelRunnerService(models, localModels, outbound);

  // Marketplaces: one hub session each; satellite tokens are verified with the hub that issued them.
  const hubs = new HubClients((sealed) => box.decrypt(sealed), HUB_TIMEOUT_MS, clock, tenantFetch);
  const publishing = new PublishingService({
    endpoints: endpointRepository,
    policies: policyRepository,
    marketplaces: marketplaceRepository,
    hubs,
    multiTenancy: config.multiTenancy,
    log,
    clock,
  });
  const settingsRepository = new TenantSettingsRepository(db, box, clock);
  // This knode's satellite at each marketplace (API-CONTRACT 9.1): its id is the audience of the hub's tokens.
  const satelliteRegistry = new SatelliteRegistry({
    marketplaces: marketplaceRepository,
    hubs,
    publicUrlOf: (tenantId) => settingsRepository.getPublicUrl(tenantId),
    log,
    clock,
  });
  const publicUrl = new PublicUrlService({
    settings: settingsRepository,
    marketplaces: marketplaceRepository,
    hubs,
    publishing,
    satellites: satelliteRegistry,
    log,
  });
  const satellites = new HubSatelliteVerifier({
    hubs,
    marketplaces: marketplaceRepository,
    log,
    clock,
    ...(options.jwksCooldownMs !== undefined ? { jwksCooldownMs: options.jwksCooldownMs } : {}),
  });
  const tunnelProvider = options.tunnelProvider === undefined ? new NgrokTunnelProvider() : options.tunnelProvider;
  const tunnels = new TunnelManager(
    tunnelProvider ?? undefined,
    tunnelAdapter({
      settingsRepository,
      publicUrl,
      tenants: tenantRepository,
      marketplaces: marketplaceRepository,
      hubs,
      tunnelDomain: config.tunnelDomain,
    }),
    log,
    TUNNEL_BACKOFF,
    config.port,
    clock,
    new LeasedTunnels({
      db,
      work: clusterWork,
      coordination,
      clock,
      log,
      ...(config.leaseTtlMs !== undefined ? { leaseTtlMs: config.leaseTtlMs } : {}),
    }),
  );
  const endpoints = new EndpointService(
    endpointRepository,
    datasetRepository,
    modelRepository,
    policyRepository,
    clock,
    publishing,
    config.tenantQuotas.endpoints,
  );
  const publishingTasks = new PublishingTasks({
    config,
    log,
    tenants: tenantRepository,
    endpoints: endpointRepository,
    marketplaces: marketplaceRepository,
    settingsRepository,
    publicUrl,
    publishing,
    satellites: satelliteRegistry,
    hubs,
    health: new EndpointHealth(datasetRepository, modelRunner),
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    clock,
    onHeartbeatFailure: (label) => metrics.heartbeatFailed(label),
    outbound,
  });

  const marketplaces = new MarketplaceService(
    db,
    marketplaceRepository,
    box,
    hubs,
    {
      // Announced right after the marketplace's row is committed (MarketplaceService writes it itself):
      // the other replicas drop what they keep of it (subscribeToMarketplaceChanges).
      connected: async (tenant, id) => {
        await satelliteRegistry.connected(tenant, id);
        await announceMarketplace(coordination, id, 'connected', log);
      },
      deleted: (id) => {
        satelliteRegistry.forget(id);
        void announceMarketplace(coordination, id, 'deleted', log);
      },
    },
    outbound,
    clock,
  );
  const walletRepository = new WalletRepository(db, box);
  const journal = new SettlementJournal(database.db, leases.holder, clock);
  const payments = new MppGateway({
    wallets: walletRepository,
    consumed: new ConsumedStore(database.db, clock),
    journal,
    clock,
    replicas: coordination.liveness,
    outbound: tenantFetch,
    ...(options.paymentReceiptTimeoutMs !== undefined ? { receiptTimeoutMs: options.paymentReceiptTimeoutMs } : {}),
  });
  const settlements = new SettlementReconciler({
    journal,
    replicas: coordination.liveness,
    adoptsUnderLease: true,
    writeUsage: (entry) => usageRepository.recordSettlement(entry),
    paymentFailed: (entry, reason) => usageRepository.paymentFailed(entry, reason),
    log,
    outbound: tenantFetch,
    clock,
  });
  const datasetSearch = new DatasetSearchService(config, datasetRepository, store, searchEngine, embedderFetch);
  // Each dataset's own calibration, fitted in the background once its files are indexed and again as it grows;
  // a look every minute at which datasets need one costs a few queries.
  const calibrator = new DatasetCalibrator({
    datasets: datasetRepository,
    store,
    embedderOf: async (record) =>
      datasetEmbedder(record.configuration, {
        dataDir: config.dataDir,
        allowDownload: config.allowModelDownload,
        outbound: await embedderFetch(record.tenant_id),
      }),
    log,
    intervalMs: 60_000,
    clock,
  });

  const datasetLeases = new LeasedDatasets({
    leases,
    changes,
    engine: ingestion,
    activeDatasets: () => datasetRepository.listActive(),
    log,
    announces: coordination.shared,
  });
  leaseHolder.holds = (datasetId) => datasetLeases.holds(datasetId);
  changes.subscribe(marketplaceSubscriber(leases, hubs, satelliteRegistry));

  const tenants = new TenantService(tenantRepository, userRepository, ingestionRoots);
  const analytics = new AnalyticsService(new AnalyticsRepository(db), tenants, clock);
  const services: Services = {
    config,
    log,
    database,
    searchEngine,
    vectorStore: store,
    guard: new CredentialGuard({
      config,
      tokens,
      users: userRepository,
      tenants: tenantRepository,
      satellites,
      publicHosts: settingsRepository,
    }),
    requestGuard: new RequestGuard({ config, publicHosts: settingsRepository }),
    limits,
    failedAuth: new FailedAuthLimiter(windows),
    auth: new AuthService(db, userRepository, tenantRepository, tokens, options.passwordHashCost),
    tenants,
    datasets: new DatasetService(
      datasetRepository,
      { defaultEmbedder: config.embedder, quota: config.tenantQuotas.datasets, searchEngine },
      ingestionRoots,
      datasetLeases,
      files,
      clock,
      outbound,
      store,
      feedRepository,
    ),
    selections: new DatasetSelectionService(db, datasetRepository, ingestionRoots, datasetLeases, clock),
    ingestion,
    datasetLeases,
    coordination,
    clusterWork,
    models,
    modelRunner,
    endpoints,
    policies: new PolicyService(policyRepository, endpointRepository, clock, publishing, config.tenantQuotas.policies),
    marketplaces,
    publishing,
    hubs,
    publishingTasks,
    publicUrl,
    tunnels,
    query: new QueryPipeline({
      endpoints: endpointRepository,
      policies: policyRepository,
      hooks: new PolicyHooks({ limits, windows, accounting: marketplaces, payments }),
      usage: usageRepository,
      search: datasetSearch,
      models: modelRunner,
      observer: metrics,
      questions: analytics,
      log,
      clock,
    }),
    usage: new UsageService(endpointRepository, usageRepository, clock),
    analytics,
    wallets: new WalletService(walletRepository, clock, outbound),
    payments,
    settlements,
    ingestionRoots,
    datasetSearch,
    calibrator,
    outbound,
    metrics,
    storage: new StorageService({ config, datasets: datasetRepository, store, owners: ingestionRoots, db }),
    marketplaceStatus: { marketplaces: marketplaceRepository, endpoints: endpointRepository, hubs, heartbeats: publishingTasks },
    close: async () => {
      await tunnels.shutdown(); // closed before their leases are released: never two at once for a tenant
      await clusterWork.close(); // the single-instance work stops here, and another replica may take it over
      await publishingTasks.close(); // also aborts every hub request in flight
      await settlements.close();
      await calibrator.stop();
      await ingestion.close();
      await datasetLeases.close(); // after the engine: the datasets are taken over once they stopped here
      await changes.stop();
      await alive.stop(); // last: the other replicas finish this one's payments from here on
      await leases.close();
      await pool.close();
      await closeEmbedders();
      await localModels.dispose();
      await state.close();
    },
  };
  // Changes other replicas make are heard from here on (a single node hears only its own, in-process).
  await changes.start();
  // Datasets that were ingesting when knode stopped resume in the background: start-up does not wait. Each
  // runs on the replica holding its lease; on a single node, this one, at once.
  void datasetLeases.resumeAll();
  clusterWork.keep(SINGLETON.calibrator, { start: () => calibrator.start(), stop: () => calibrator.stop() });
  // Likewise the marketplace work: SVC_PUBLIC_URL, the start-up sync, then heartbeats (again from the start
  // on a replica that takes the lease over).
  let heartbeatTerms = 0;
  clusterWork.keep(SINGLETON.heartbeats, {
    start: () => (heartbeatTerms++ === 0 ? publishingTasks.start() : publishingTasks.resume()),
    stop: () => publishingTasks.pause(),
  });
  // This replica's late receipts are confirmed here; the payments a stopped replica left in the journal are
  // finished (or released) from the chain by one replica at a time, in the background.
  settlements.start();
  clusterWork.keep(SINGLETON.reconciler, { start: () => settlements.adopt(), stop: () => settlements.relinquish() });
  return services;
}
