import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { errorMessage } from '../domain/errors.ts';
import { DEFAULT_TENANT } from '../domain/principal.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import { outboundFetch } from '../outbound/fetch.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import { unpublishableReason } from '../syfthub/endpoint-metadata.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { TenantRepository } from '../tenants/repository.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import type { EndpointHealth } from './endpoint-health.ts';
import { backoffDelay, HEARTBEAT_TTL_SECONDS, Heartbeat, type HeartbeatResult, type HeartbeatTarget } from './heartbeat.ts';
import { detectPublicIp, publicUrlFor } from './public-ip.ts';
import type { PublicUrlService } from './public-url.ts';
import type { SatelliteRegistry } from './satellites.ts';
import type { PublishingService } from './service.ts';
import type { TenantSettingsRepository } from './settings-repository.ts';

const PUBLIC_IP_TIMEOUT_MS = 5_000;
/** An archive a marketplace could not be told of is tried again at the heartbeats, 1, 2, 4... intervals apart, at most this far. */
const ARCHIVE_RETRY_MAX_MS = 10 * 60_000;

export interface PublishingTaskDeps {
  config: Config;
  log: Logger;
  tenants: TenantRepository;
  endpoints: EndpointRepository;
  marketplaces: MarketplaceRepository;
  settingsRepository: TenantSettingsRepository;
  publicUrl: PublicUrlService;
  publishing: PublishingService;
  satellites: SatelliteRegistry;
  hubs: HubClients;
  health: EndpointHealth;
  heartbeatIntervalMs: number;
  /** What the heartbeats are timed by. */
  clock: Clock;
  /** Told of every heartbeat a marketplace did not take (label: tenant and marketplace). */
  onHeartbeatFailure?: (label: string) => void;
  /** The public-IP lookup is the operator's call (SVC_PUBLIC_IP_URL), made through the outbound module. */
  outbound: OutboundPolicy;
}

/**
 * What knode does with its marketplaces on its own, in the background (start-up never waits for it,
 * and nothing here can fail start-up): adopt SVC_PUBLIC_URL for the `default` tenant, register (or move)
 * this knode's satellite at every marketplace of a tenant with a public URL, sync every tenant's published
 * endpoints once, then send the health heartbeats until shutdown (each beat first retries the
 * registrations that failed, and the archives and unarchives that a marketplace was not told of).
 */
export class PublishingTasks {
  private readonly heartbeat: Heartbeat;
  /** Endpoints whose archive some marketplace was not told of, by id: failed retries in a row, and when to try next. */
  private readonly archiveRetries = new Map<string, { failures: number; retryAt: number }>();
  private readonly closing = new AbortController();
  private startup: Promise<void> | undefined;

  constructor(private readonly deps: PublishingTaskDeps) {
    this.heartbeat = new Heartbeat({
      intervalMs: deps.heartbeatIntervalMs,
      targets: () => this.heartbeatTargets(),
      log: deps.log,
      clock: deps.clock,
      ...(deps.onHeartbeatFailure ? { onFailure: deps.onHeartbeatFailure } : {}),
    });
  }

  start(): void {
    this.startup = this.runStartup().catch((error: unknown) => this.deps.log.warn({ err: error }, 'marketplace start-up work failed'));
    this.heartbeat.start();
  }

  /** Cluster mode: the heartbeats' lease went to another replica; the hub sessions stay open for requests. */
  async pause(): Promise<void> {
    await this.heartbeat.stop();
    await this.startup;
  }

  /** Cluster mode: the heartbeats' lease came (back) to this replica: the start-up work and sync run, then heartbeats. */
  resume(): void {
    this.startup = this.runStartup().catch((error: unknown) => this.deps.log.warn({ err: error }, 'marketplace start-up work failed'));
    this.heartbeat.resume();
  }

  /** Stops the heartbeats, aborts every hub request in flight, and waits for the background work to end. */
  async close(): Promise<void> {
    this.closing.abort();
    const heartbeatStopped = this.heartbeat.stop(); // no beat starts from here on
    this.deps.hubs.close();
    await heartbeatStopped;
    await this.startup;
  }

  /** How the last heartbeat to a marketplace went (undefined: none since knode started). */
  lastHeartbeat(marketplaceId: string): HeartbeatResult | undefined {
    return this.heartbeat.lastResult(marketplaceId);
  }

  /** The heartbeat itself, for tests that want a beat now. */
  beat(): Promise<void> {
    return this.heartbeat.beat();
  }

  private async runStartup(): Promise<void> {
    const adopted = await this.adoptConfiguredPublicUrl();
    if (this.closing.signal.aborted) return;
    await this.registerSatellites(adopted);
    if (this.closing.signal.aborted) return;
    for (const tenantId of await this.deps.endpoints.tenantsWithPublications()) {
      if (this.closing.signal.aborted) return;
      const tenant = await this.deps.tenants.findById(tenantId);
      if (!tenant) continue;
      try {
        const synced = await this.deps.publishing.sync(tenant);
        this.deps.log.info({ tenant: tenant.name, synced }, 'endpoints synced to marketplaces at start-up');
      } catch (error) {
        this.deps.log.warn({ tenant: tenant.name, err: errorMessage(error) }, 'start-up sync failed');
      }
    }
  }

  /**
   * Every active marketplace of a tenant with a public URL registers (or moves) this knode's satellite
   * before the start-up sync, which then names it. `done`: the tenant whose marketplaces took the
   * adopted SVC_PUBLIC_URL just now. A failure is logged and retried at the heartbeats.
   */
  private async registerSatellites(done: string | undefined): Promise<void> {
    for (const marketplace of await this.deps.marketplaces.listAllActive()) {
      if (this.closing.signal.aborted) return;
      if (marketplace.tenant_id === done) continue;
      const url = await this.deps.settingsRepository.getPublicUrl(marketplace.tenant_id);
      const tenant = url ? await this.deps.tenants.findById(marketplace.tenant_id) : undefined;
      if (url && tenant) await this.deps.satellites.ensureOrRetry(tenant, marketplace.id, url);
    }
  }

  /**
   * SVC_PUBLIC_URL: unset keeps the stored URL; empty detects the public IP; anything else is the URL.
   * Answers the id of the tenant whose marketplaces took it.
   */
  private async adoptConfiguredPublicUrl(): Promise<string | undefined> {
    const { config, log } = this.deps;
    if (config.publicUrl === undefined) return;
    let url = config.publicUrl;
    if (url === '') {
      try {
        const fetcher = outboundFetch(this.deps.outbound.operator(), { timeoutMs: PUBLIC_IP_TIMEOUT_MS });
        url = publicUrlFor(await detectPublicIp(config.publicIpUrl, fetcher, this.closing.signal), config.port);
      } catch (error) {
        log.warn({ err: errorMessage(error) }, 'the public IP could not be detected: the public URL stays as it was');
        return;
      }
    }
    const tenant = await this.deps.tenants.findByName(DEFAULT_TENANT);
    if (!tenant) return;
    try {
      const adopted = await this.deps.publicUrl.adoptPublicUrl(tenant, url, config.publicUrl === '' ? 'detected' : 'configured');
      log.info({ publicUrl: adopted }, 'public URL set from SVC_PUBLIC_URL');
      return tenant.id;
    } catch (error) {
      log.warn(
        { publicUrl: url, err: errorMessage(error) },
        'public URL stored, but the default marketplace did not take it (heartbeats will carry it)',
      );
      return undefined;
    }
  }

  /**
   * The satellite registrations that failed earlier, tried again when their time has come; a tenant
   * whose marketplace got its satellite has its endpoints synced, so that they are attached to it.
   */
  private async retrySatellites(): Promise<void> {
    for (const tenant of await this.deps.satellites.retryDue()) {
      await this.deps.publishing
        .sync(tenant)
        .catch((error: unknown) =>
          this.deps.log.warn({ tenant: tenant.name, err: errorMessage(error) }, 'sync after a registration failed'),
        );
    }
  }

  /**
   * Archived endpoints still listed by an active marketplace (and unarchived ones not yet listed again), which
   * the archive's own call could not settle: tried again at the first beat, then further apart while they fail.
   * The links are in the database, so a restart forgets nothing but the backoff.
   */
  private async retryArchives(): Promise<void> {
    const unsettled = await this.deps.endpoints.unsettledPublications();
    const due = new Map<string, string>(); // endpoint id → tenant id
    for (const link of unsettled) due.set(link.endpoint_id, link.tenant_id);
    for (const id of this.archiveRetries.keys()) if (!due.has(id)) this.archiveRetries.delete(id);
    for (const [endpointId, tenantId] of due) {
      if (this.closing.signal.aborted) return;
      const retry = this.archiveRetries.get(endpointId);
      if (retry && retry.retryAt > this.deps.clock.now()) continue;
      const tenant = await this.deps.tenants.findById(tenantId);
      if (!tenant) continue;
      if (await this.deps.publishing.settleArchive(tenant, endpointId).catch(() => false)) {
        this.archiveRetries.delete(endpointId);
        this.deps.log.info({ tenant: tenant.name, endpoint: endpointId }, 'every marketplace now matches the endpoint’s archive');
        continue;
      }
      const failures = (retry?.failures ?? 0) + 1;
      const delay = backoffDelay(failures - 1, this.deps.heartbeatIntervalMs, ARCHIVE_RETRY_MAX_MS);
      this.archiveRetries.set(endpointId, { failures, retryAt: this.deps.clock.now() + delay });
    }
  }

  /** Every active marketplace with published endpoints, of every tenant that has a public URL. */
  private async heartbeatTargets(): Promise<HeartbeatTarget[]> {
    await this.retrySatellites();
    await this.retryArchives().catch((error: unknown) =>
      this.deps.log.warn({ err: errorMessage(error) }, 'retrying the archives marketplaces were not told of failed'),
    );
    const targets: HeartbeatTarget[] = [];
    for (const tenantId of await this.deps.endpoints.tenantsWithPublications()) {
      const url = await this.deps.settingsRepository.getPublicUrl(tenantId);
      const tenant = url ? await this.deps.tenants.findById(tenantId) : undefined;
      if (!url || !tenant) continue;
      const healthy = this.deps.health.round(tenant);
      for (const marketplace of await this.deps.marketplaces.listActive(tenantId)) {
        const endpoints = (await this.deps.endpoints.listPublishedTo(tenantId, marketplace.id)).filter((row) => !unpublishableReason(row));
        if (endpoints.length === 0) continue;
        targets.push({
          key: marketplace.id,
          label: `${tenant.name}/${marketplace.name}`,
          client: this.deps.hubs.client(marketplace),
          report: async () => ({
            // The satellite the report is for: the hub moves it to `url` and marks it seen.
            ...(marketplace.satellite_id ? { satellite_id: marketplace.satellite_id } : {}),
            endpoints: await Promise.all(
              endpoints.map(async (endpoint) => ({
                slug: endpoint.slug,
                status: (await healthy(endpoint)) ? ('healthy' as const) : ('unhealthy' as const),
                checked_at: isoNow(this.deps.clock),
              })),
            ),
            ttl_seconds: HEARTBEAT_TTL_SECONDS,
            url,
          }),
        });
      }
    }
    return targets;
  }
}
