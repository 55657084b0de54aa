import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { now } from '../db/database.ts';
import { errorMessage } from '../domain/errors.ts';
import { DEFAULT_TENANT } from '../domain/principal.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import { unpublishableReason } from '../syfthub/endpoint-metadata.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { TenantRepository } from '../tenants/repository.ts';
import type { Clock } from '../util/clock.ts';
import type { EndpointHealth } from './endpoint-health.ts';
import { HEARTBEAT_TTL_SECONDS, Heartbeat, type HeartbeatResult, type HeartbeatTarget } from './heartbeat.ts';
import { detectPublicIp, publicUrlFor } from './public-ip.ts';
import type { PublicUrlService } from './public-url.ts';
import type { PublishingService } from './service.ts';
import type { TenantSettingsRepository } from './settings-repository.ts';

export interface PublishingTaskDeps {
  config: Config;
  log: Logger;
  tenants: TenantRepository;
  endpoints: EndpointRepository;
  marketplaces: MarketplaceRepository;
  settingsRepository: TenantSettingsRepository;
  publicUrl: PublicUrlService;
  publishing: PublishingService;
  hubs: HubClients;
  health: EndpointHealth;
  heartbeatIntervalMs: number;
  /** What the heartbeats are timed by. */
  clock: Clock;
  /** Told of every heartbeat a marketplace did not take (label: tenant and marketplace). */
  onHeartbeatFailure?: (label: string) => void;
}

/**
 * What knode does with its marketplaces on its own, in the background (start-up never waits for it,
 * and nothing here can fail start-up): adopt SVC_PUBLIC_URL for the `default` tenant, sync every
 * tenant's published endpoints once, then send the health heartbeats until shutdown.
 */
export class PublishingTasks {
  private readonly heartbeat: Heartbeat;
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
    await this.adoptConfiguredPublicUrl();
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

  /** SVC_PUBLIC_URL: unset keeps the stored URL; empty detects the public IP; anything else is the URL. */
  private async adoptConfiguredPublicUrl(): Promise<void> {
    const { config, log } = this.deps;
    if (config.publicUrl === undefined) return;
    let url = config.publicUrl;
    if (url === '') {
      try {
        url = publicUrlFor(await detectPublicIp(config.publicIpUrl, this.closing.signal), config.port);
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
    } catch (error) {
      log.warn(
        { publicUrl: url, err: errorMessage(error) },
        'public URL stored, but the default marketplace did not take it (heartbeats will carry it)',
      );
    }
  }

  /** Every active marketplace with published endpoints, of every tenant that has a public URL. */
  private async heartbeatTargets(): Promise<HeartbeatTarget[]> {
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
            endpoints: await Promise.all(
              endpoints.map(async (endpoint) => ({
                slug: endpoint.slug,
                status: (await healthy(endpoint)) ? ('healthy' as const) : ('unhealthy' as const),
                checked_at: now(),
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
