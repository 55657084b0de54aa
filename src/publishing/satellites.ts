import type { Logger } from 'pino';
import { errorMessage } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { MarketplaceRecord } from '../marketplaces/codec.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients, HubSatellite } from '../syfthub/hub-client.ts';
import type { Clock } from '../util/clock.ts';
import { SerialQueue } from '../util/serial-queue.ts';
import { backoffDelay, HEARTBEAT_INTERVAL_MS } from './heartbeat.ts';

export interface SatelliteRegistryDeps {
  marketplaces: Pick<MarketplaceRepository, 'get' | 'update'>;
  hubs: HubClients;
  /** The tenant's stored public URL, which a retry registers (it may have changed since the failure). */
  publicUrlOf(tenantId: string): Promise<string | null>;
  log: Logger;
  clock: Clock;
}

/**
 * `registry`: the hub has the satellite registry and keeps this knode's satellite at the public URL (its
 * id is stored with the marketplace). `legacy`: a hub of 2026-07 without it (404), where the public URL
 * is the account's `domain` as before. `skipped`: the marketplace is gone or inactive.
 */
export type SatelliteOutcome = 'registry' | 'legacy' | 'skipped';

/** A failing registration is tried again at the heartbeats, 2, 4, 8... intervals apart, at most this far. */
const MAX_RETRY_MS = 10 * 60_000;

/**
 * This knode's satellite at each marketplace (API-CONTRACT 9.1, "What knode does" 1): once the tenant
 * has a public URL, the marketplace registers it (POST /satellites, idempotent on the origin) and its id
 * is kept; a new public URL moves that satellite (PUT /satellites/{id}), so the tokens' audience stays.
 * The hub's tokens name that id, and publish, sync, health and /verify carry it, so that they keep
 * working when the account runs another space too.
 *
 * A marketplace's registrations run one at a time (connect, start-up and a URL change may overlap). A
 * registration that fails in the background is logged and tried again later (`retryDue`, at the
 * heartbeats); it never stops start-up or a connection.
 */
export class SatelliteRegistry {
  private readonly queues = new Map<string, SerialQueue>();
  private readonly retries = new Map<string, { tenant: Tenant; failures: number; retryAt: number }>();

  constructor(private readonly deps: SatelliteRegistryDeps) {}

  /**
   * Registers or moves the marketplace's satellite to `publicUrl`; hub failures are thrown (the caller
   * decides whether they fail what it does, or are retried).
   */
  ensure(tenant: Tenant, marketplaceId: string, publicUrl: string): Promise<SatelliteOutcome> {
    let queue = this.queues.get(marketplaceId);
    if (!queue) {
      queue = new SerialQueue();
      this.queues.set(marketplaceId, queue);
    }
    return queue.run(async () => {
      const outcome = await this.ensureNow(tenant, marketplaceId, publicUrl);
      this.retries.delete(marketplaceId);
      return outcome;
    });
  }

  /** Like `ensure`, in the background's way: a failure is logged and the registration retried later. */
  async ensureOrRetry(tenant: Tenant, marketplaceId: string, publicUrl: string): Promise<SatelliteOutcome | undefined> {
    try {
      return await this.ensure(tenant, marketplaceId, publicUrl);
    } catch (error) {
      this.failed(tenant, marketplaceId, error);
      return undefined;
    }
  }

  /** A registration that failed elsewhere (the public URL adopted at start-up), to try again later. */
  failed(tenant: Tenant, marketplaceId: string, error: unknown): void {
    const failures = (this.retries.get(marketplaceId)?.failures ?? 0) + 1;
    const delay = backoffDelay(failures - 1, HEARTBEAT_INTERVAL_MS, MAX_RETRY_MS);
    this.retries.set(marketplaceId, { tenant, failures, retryAt: this.deps.clock.now() + delay });
    this.deps.log.warn(
      { tenant: tenant.name, marketplace: marketplaceId, failures, retryInMs: delay, err: errorMessage(error) },
      'the marketplace could not register this server as its satellite: it is tried again later',
    );
  }

  /** After a marketplace is connected (or its credentials changed): registers it if the tenant has a public URL. */
  async connected(tenant: Tenant, marketplaceId: string): Promise<void> {
    const publicUrl = await this.deps.publicUrlOf(tenant.id);
    if (publicUrl) await this.ensureOrRetry(tenant, marketplaceId, publicUrl);
  }

  /** Tries again the registrations whose time has come; answers the tenants that got their satellite. */
  async retryDue(): Promise<Tenant[]> {
    const registered: Tenant[] = [];
    for (const [marketplaceId, retry] of [...this.retries]) {
      if (retry.retryAt > this.deps.clock.now()) continue;
      const publicUrl = await this.deps.publicUrlOf(retry.tenant.id);
      if (!publicUrl) {
        this.retries.delete(marketplaceId);
        continue;
      }
      const outcome = await this.ensureOrRetry(retry.tenant, marketplaceId, publicUrl);
      if (outcome === 'registry') registered.push(retry.tenant);
    }
    return registered;
  }

  /** Whether a registration is waiting to be tried again (the status view and tests read it). */
  pending(marketplaceId: string): boolean {
    return this.retries.has(marketplaceId);
  }

  /** The marketplace was deleted: nothing of it is kept. */
  forget(marketplaceId: string): void {
    this.retries.delete(marketplaceId);
    this.queues.delete(marketplaceId);
  }

  private async ensureNow(tenant: Tenant, marketplaceId: string, publicUrl: string): Promise<SatelliteOutcome> {
    const marketplace = await this.deps.marketplaces.get(tenant.id, marketplaceId);
    if (!marketplace?.is_active) return 'skipped';
    const client = this.deps.hubs.client(marketplace);
    if (marketplace.satellite_id) {
      const moved = await client.moveSatellite(marketplace.satellite_id, publicUrl);
      if ('satellite' in moved) {
        await this.keep(tenant, marketplace, moved.satellite);
        return 'registry';
      }
      if ('taken' in moved) {
        // Another satellite of the account holds that origin: ours keeps its id (the tokens name it), and
        // the owner is told, since consumers of that origin are sent there by the other satellite's listing.
        this.deps.log.warn(
          { tenant: tenant.name, marketplace: marketplace.name, publicUrl, reason: moved.taken },
          'another satellite of the hub account holds the public URL: this server keeps its satellite',
        );
        return 'registry';
      }
      // The hub no longer knows the id (deleted at the hub, or no registry any more): register anew.
      this.deps.log.info(
        { tenant: tenant.name, marketplace: marketplace.name },
        'the hub forgot this server’s satellite: registering it again',
      );
      await this.deps.marketplaces.update(tenant.id, marketplace.id, { satellite_id: null, satellite_url: null });
    }
    const registered = await client.registerSatellite(publicUrl);
    if ('satellite' in registered) {
      await this.keep(tenant, marketplace, registered.satellite);
      return 'registry';
    }
    return 'legacy';
  }

  /** Stores the satellite; `updated_at` stays, as it tells when the owner changed the record. */
  private async keep(tenant: Tenant, marketplace: MarketplaceRecord, satellite: HubSatellite): Promise<void> {
    if (marketplace.satellite_id === satellite.id && marketplace.satellite_url === satellite.base_url) return;
    await this.deps.marketplaces.update(tenant.id, marketplace.id, {
      satellite_id: satellite.id,
      satellite_url: satellite.base_url,
    });
    this.deps.log.info(
      { tenant: tenant.name, marketplace: marketplace.name, satellite: satellite.id, at: satellite.base_url },
      'this server is the marketplace’s satellite',
    );
  }
}
