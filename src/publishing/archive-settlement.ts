import type { Logger } from 'pino';
import { errorMessage } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRecord } from '../endpoints/codec.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { SerialQueue } from '../util/serial-queue.ts';

export interface ArchiveSettlementDeps {
  endpoints: EndpointRepository;
  marketplaces: MarketplaceRepository;
  hubs: HubClients;
  log: Logger;
  /** When a hub took an endpoint off (`withdrawn_at`). */
  clock: Clock;
  /** Publishes the endpoint to one marketplace as a publish does (its metadata, its satellite); the error, if any. */
  republish(tenant: Tenant, endpoint: EndpointRecord, marketplaceId: string): Promise<string | undefined>;
}

/**
 * Makes each marketplace an endpoint is linked to match its archive (API-CONTRACT 4, "Archive"): an archived
 * endpoint is taken off (the link stays, `withdrawn_at` says the hub took it off), an unarchived one is published
 * there again (`withdrawn_at` cleared). The owner's archive stands at once whatever the hubs answer: a marketplace
 * that cannot be told now keeps its link unsettled, and the heartbeats try it again (PublishingTasks).
 *
 * An endpoint's settlements run one at a time, so that an archive and an unarchive in quick succession (or
 * a retry meanwhile) reach a hub in the order they were made, and each reads the endpoint as it is then.
 */
export class ArchiveSettlement {
  private readonly queues = new Map<string, { queue: SerialQueue; waiting: number }>();

  constructor(private readonly deps: ArchiveSettlementDeps) {}

  /** True when every active marketplace of the endpoint now matches its archive (an inactive one waits). */
  settle(tenant: Tenant, endpointId: string): Promise<boolean> {
    let entry = this.queues.get(endpointId);
    if (!entry) {
      entry = { queue: new SerialQueue(), waiting: 0 };
      this.queues.set(endpointId, entry);
    }
    const held = entry;
    held.waiting++;
    return held.queue
      .run(() => this.settleNow(tenant, endpointId))
      .finally(() => {
        if (--held.waiting === 0) this.queues.delete(endpointId);
      });
  }

  private async settleNow(tenant: Tenant, endpointId: string): Promise<boolean> {
    const endpoint = await this.deps.endpoints.getById(tenant.id, endpointId);
    if (!endpoint) return true;
    const archived = Boolean(endpoint.archived_at);
    const links = await this.deps.endpoints.remembered(tenant.id, endpoint.id);
    const unsettled = links.filter((link) => (link.withdrawn_at === null) === archived);
    const outcomes = await Promise.all(
      unsettled.map((link) =>
        archived ? this.withdraw(tenant, endpoint, link.marketplace_id) : this.republish(tenant, endpoint, link.marketplace_id),
      ),
    );
    return outcomes.every(Boolean);
  }

  private async withdraw(tenant: Tenant, endpoint: EndpointRecord, marketplaceId: string): Promise<boolean> {
    const marketplace = await this.deps.marketplaces.get(tenant.id, marketplaceId);
    if (!marketplace?.is_active) return false;
    try {
      await this.deps.hubs.client(marketplace).unpublish(endpoint.slug); // 'absent' is as good as 'removed'
    } catch (error) {
      this.failed(tenant, endpoint, marketplace.name, 'could not take an archived endpoint off its marketplace', error);
      return false;
    }
    await this.deps.endpoints.setWithdrawn(tenant.id, endpoint.id, marketplace.id, isoNow(this.deps.clock));
    return true;
  }

  private async republish(tenant: Tenant, endpoint: EndpointRecord, marketplaceId: string): Promise<boolean> {
    const error = await this.deps.republish(tenant, endpoint, marketplaceId);
    if (error === undefined) return true; // publishing cleared the link's withdrawn_at
    this.failed(tenant, endpoint, marketplaceId, 'could not publish an unarchived endpoint again', error);
    return false;
  }

  private failed(tenant: Tenant, endpoint: EndpointRecord, marketplace: string, message: string, error: unknown): void {
    this.deps.log.warn(
      { tenant: tenant.name, endpoint: endpoint.slug, marketplace, err: errorMessage(error) },
      `${message}: it is tried again at the heartbeats`,
    );
  }
}
