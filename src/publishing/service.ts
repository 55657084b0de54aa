import type { Logger } from 'pino';
import type { Static } from 'typebox';
import { ConflictError, errorMessage, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRecord } from '../endpoints/codec.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import type { MarketplaceRecord } from '../marketplaces/codec.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import { publishedPolicy } from '../policies/price-tiers.ts';
import type { PolicyRepository } from '../policies/repository.ts';
import { type HubEndpoint, hubEndpoint, unpublishableReason, withTenantName } from '../syfthub/endpoint-metadata.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { ArchiveSettlement } from './archive-settlement.ts';
import type { PublicationAnswer, PublicationResult, PublishBody, SyncAnswer, UnpublishBody } from './schemas.ts';

type Result = Static<typeof PublicationResult>;
type Answer = Static<typeof PublicationAnswer>;
type Synced = Static<typeof SyncAnswer>;

/** SyftHub's batch sync takes at most this many endpoints; the rest are published one by one. */
const HUB_SYNC_MAX = 300;

export interface PublishingDeps {
  endpoints: EndpointRepository;
  policies: PolicyRepository;
  marketplaces: MarketplaceRepository;
  hubs: HubClients;
  /** SVC_MULTI_TENANCY: the metadata then names the endpoint's tenant (API-CONTRACT 9.1, point 5). */
  multiTenancy: boolean;
  log: Logger;
  /** When an endpoint was published, taken off, or changed by either. */
  clock: Clock;
}

/**
 * Publishing endpoints to marketplaces (specification: Endpoint management rules 4 to 6; API-CONTRACT 4
 * and 9): each marketplace gets its own result, `published_to` records where an endpoint is, and the
 * batch sync re-sends everything a marketplace should have.
 */
export class PublishingService {
  private readonly archive: ArchiveSettlement;

  constructor(private readonly deps: PublishingDeps) {
    this.archive = new ArchiveSettlement({
      ...deps,
      republish: async (tenant, endpoint, marketplaceId) => {
        const metadata = this.inTenant(tenant, await this.metadata(tenant, endpoint));
        const result = await this.publishTo(tenant, endpoint, metadata, marketplaceId);
        return result.success ? undefined : (result.error ?? result.message);
      },
    });
  }

  async publish(tenant: Tenant, slug: string, body: Static<typeof PublishBody>): Promise<Answer> {
    const endpoint = await this.requireEndpoint(tenant, slug);
    refuseArchived(endpoint, 'publish');
    const ids = body.publish_to_all_marketplaces
      ? (await this.deps.marketplaces.listActive(tenant.id)).map((marketplace) => marketplace.id)
      : requiredIds(body.marketplace_ids, 'publish_to_all_marketplaces');
    const metadata = this.inTenant(tenant, await this.metadata(tenant, endpoint));
    const results = await Promise.all(ids.map((id) => this.publishTo(tenant, endpoint, metadata, id)));
    if (results.some((result) => result.success) && !endpoint.published) {
      await this.deps.endpoints.update(tenant.id, endpoint.id, { published: true, updated_at: isoNow(this.deps.clock) });
    }
    return { endpoint_slug: endpoint.slug, results };
  }

  async unpublish(tenant: Tenant, slug: string, body: Static<typeof UnpublishBody>): Promise<Answer> {
    const endpoint = await this.requireEndpoint(tenant, slug);
    refuseArchived(endpoint, 'unpublish');
    const ids = body.unpublish_from_all ? await this.publishedTo(endpoint) : requiredIds(body.marketplace_ids, 'unpublish_from_all');
    const results = await Promise.all(ids.map((id) => this.unpublishFrom(tenant, endpoint, id)));
    if ((await this.publishedTo(endpoint)).length === 0 && endpoint.published) {
      await this.deps.endpoints.update(tenant.id, endpoint.id, { published: false, updated_at: isoNow(this.deps.clock) });
    }
    return { endpoint_slug: endpoint.slug, results };
  }

  /**
   * After the endpoint or one of its policies changed here: sends its metadata again to the marketplaces
   * it is published to, so what consumers see there stays true. Best effort, in the background: the
   * change stands, a marketplace that cannot be told is logged (a later publish or sync catches up).
   */
  refresh(tenant: Tenant, endpointId: string): void {
    void (async () => {
      const endpoint = await this.deps.endpoints.getById(tenant.id, endpointId);
      if (!endpoint) return;
      const ids = await this.publishedTo(endpoint);
      if (ids.length === 0) return;
      const metadata = this.inTenant(tenant, await this.metadata(tenant, endpoint));
      for (const result of await Promise.all(ids.map((id) => this.publishTo(tenant, endpoint, metadata, id)))) {
        if (!result.success) {
          this.deps.log.warn(
            { tenant: tenant.name, endpoint: endpoint.slug, marketplace: result.marketplace_name, err: result.error },
            'could not update a published endpoint at its marketplace',
          );
        }
      }
    })().catch((error: unknown) =>
      this.deps.log.warn({ tenant: tenant.name, err: errorMessage(error) }, 'updating a published endpoint failed'),
    );
  }

  /**
   * After the endpoint was archived or unarchived: takes it off, or publishes it again to, each marketplace
   * it is linked to (archive-settlement.ts); a marketplace that cannot be told is retried at the heartbeats.
   */
  settleArchive(tenant: Tenant, endpointId: string): Promise<boolean> {
    return this.archive.settle(tenant, endpointId);
  }

  /**
   * After the endpoint was deleted here: removes it from the marketplaces it was published to. Best
   * effort: a marketplace that cannot be told is logged, and the deletion stands.
   */
  async removeEverywhere(tenant: Tenant, slug: string, marketplaceIds: readonly string[]): Promise<void> {
    await Promise.all(
      marketplaceIds.map(async (id) => {
        const marketplace = await this.deps.marketplaces.get(tenant.id, id);
        if (!marketplace) return;
        try {
          await this.deps.hubs.client(marketplace).unpublish(slug);
        } catch (error) {
          this.deps.log.warn(
            { tenant: tenant.name, endpoint: slug, marketplace: marketplace.name, err: errorMessage(error) },
            'could not remove a deleted endpoint from its marketplace',
          );
        }
      }),
    );
  }

  /**
   * Re-sends every published endpoint to its marketplaces (the hub's sync replaces the account's list).
   * A marketplace without published endpoints is left alone (an empty sync would wipe its account) and
   * answers []. When every marketplace that had something to sync failed, the first failure is thrown;
   * otherwise failures are logged and left out of the answer.
   */
  async sync(tenant: Tenant, marketplaceIds?: readonly string[] | null): Promise<Synced> {
    let marketplaces = await this.deps.marketplaces.listActive(tenant.id);
    if (marketplaceIds) {
      const unknown = marketplaceIds.find((id) => !marketplaces.some((marketplace) => marketplace.id === id));
      if (unknown) throw new NotFoundError(`Marketplace '${unknown}' not found or not active`);
      marketplaces = marketplaces.filter((marketplace) => marketplaceIds.includes(marketplace.id));
    }
    const outcomes = await Promise.all(
      marketplaces.map(async (marketplace) => {
        try {
          return { marketplace, slugs: await this.syncMarketplace(tenant, marketplace), error: undefined };
        } catch (error) {
          this.deps.log.warn({ tenant: tenant.name, marketplace: marketplace.name, err: errorMessage(error) }, 'endpoint sync failed');
          return { marketplace, slugs: undefined, error: error as unknown };
        }
      }),
    );
    const failed = outcomes.filter((outcome) => outcome.slugs === undefined);
    const sent = outcomes.filter((outcome) => outcome.slugs !== undefined && outcome.slugs.length > 0);
    if (failed.length > 0 && sent.length === 0) throw failed[0]?.error;
    const synced: Synced = {};
    for (const { marketplace, slugs } of outcomes) if (slugs) synced[marketplace.id] = slugs;
    return synced;
  }

  /** The slugs sent; none when the marketplace has nothing published (it is then not touched). */
  private async syncMarketplace(tenant: Tenant, marketplace: MarketplaceRecord): Promise<string[]> {
    const rows = (await this.deps.endpoints.listPublishedTo(tenant.id, marketplace.id)).filter((row) => !unpublishableReason(row));
    if (rows.length === 0) return [];
    const metadata = (await this.metadataOf(tenant, rows)).map((endpoint) => this.inTenant(tenant, endpoint));
    const client = this.deps.hubs.client(marketplace);
    // With a satellite id, the sync replaces that satellite's endpoints only (the account may run other spaces).
    await client.sync(metadata.slice(0, HUB_SYNC_MAX), marketplace.satellite_id);
    // The sync replaced the list with the first 300: the others are added one by one.
    for (const endpoint of metadata.slice(HUB_SYNC_MAX)) await client.publish(endpoint, marketplace.satellite_id);
    return metadata.map((endpoint) => endpoint.slug);
  }

  private async publishTo(tenant: Tenant, endpoint: EndpointRecord, metadata: HubEndpoint, id: string): Promise<Result> {
    const marketplace = await this.deps.marketplaces.get(tenant.id, id);
    if (!marketplace) return failure(id, '', 'Marketplace not found', `Marketplace '${id}' not found`);
    if (!marketplace.is_active) {
      return failure(id, marketplace.name, `Not published to '${marketplace.name}'`, `Marketplace '${marketplace.name}' is not active`);
    }
    const unpublishable = unpublishableReason(endpoint);
    if (unpublishable) return failure(id, marketplace.name, `Not published to '${marketplace.name}'`, unpublishable);
    let outcome: 'created' | 'updated';
    try {
      outcome = await this.deps.hubs.client(marketplace).publish(metadata, marketplace.satellite_id);
    } catch (error) {
      return failure(id, marketplace.name, `Could not publish to '${marketplace.name}'`, errorMessage(error));
    }
    await this.deps.endpoints.addPublication(tenant.id, endpoint.id, marketplace.id, isoNow(this.deps.clock));
    const message =
      outcome === 'created'
        ? `Published to '${marketplace.name}'`
        : `Published to '${marketplace.name}' (the slug was already there: its metadata was updated)`;
    return { marketplace_id: id, marketplace_name: marketplace.name, success: true, message, error: null };
  }

  private async unpublishFrom(tenant: Tenant, endpoint: EndpointRecord, id: string): Promise<Result> {
    const marketplace = await this.deps.marketplaces.get(tenant.id, id);
    if (!marketplace) return failure(id, '', 'Marketplace not found', `Marketplace '${id}' not found`);
    if (!marketplace.is_active) {
      return failure(
        id,
        marketplace.name,
        `Not removed from '${marketplace.name}'`,
        `Marketplace '${marketplace.name}' is not active: activate it to remove the endpoint`,
      );
    }
    let outcome: 'removed' | 'absent';
    try {
      outcome = await this.deps.hubs.client(marketplace).unpublish(endpoint.slug);
    } catch (error) {
      return failure(id, marketplace.name, `Could not remove from '${marketplace.name}'`, errorMessage(error));
    }
    await this.deps.endpoints.removePublication(tenant.id, endpoint.id, marketplace.id);
    const message = outcome === 'removed' ? `Removed from '${marketplace.name}'` : `Not on '${marketplace.name}' (nothing to remove)`;
    return { marketplace_id: id, marketplace_name: marketplace.name, success: true, message, error: null };
  }

  /** With several tenants on this server, what a consumer needs to reach this one (see withTenantName). */
  private inTenant(tenant: Tenant, metadata: HubEndpoint): HubEndpoint {
    return this.deps.multiTenancy ? withTenantName(metadata, tenant.name) : metadata;
  }

  private async metadata(tenant: Tenant, endpoint: EndpointRecord): Promise<HubEndpoint> {
    return hubEndpoint(endpoint, (await this.deps.policies.list(tenant.id, endpoint.id)).map(publishedPolicy));
  }

  private async metadataOf(tenant: Tenant, endpoints: EndpointRecord[]): Promise<HubEndpoint[]> {
    const policies = await this.deps.policies.list(tenant.id);
    return endpoints.map((endpoint) =>
      hubEndpoint(endpoint, policies.filter((policy) => policy.endpoint_id === endpoint.id).map(publishedPolicy)),
    );
  }

  private async publishedTo(endpoint: EndpointRecord): Promise<string[]> {
    return (await this.deps.endpoints.publishedTo([endpoint.id])).get(endpoint.id) ?? [];
  }

  private async requireEndpoint(tenant: Tenant, slug: string): Promise<EndpointRecord> {
    const row = await this.deps.endpoints.getBySlug(tenant.id, slug.toLowerCase());
    if (!row) throw new NotFoundError(`Endpoint '${slug}' not found`);
    return row;
  }
}

/**
 * An archived endpoint is off every marketplace until it is unarchived (which publishes it again where it
 * was): publishing it, or unpublishing it from where it was, would contradict the archive.
 */
function refuseArchived(endpoint: EndpointRecord, action: 'publish' | 'unpublish'): void {
  if (endpoint.archived_at) {
    throw new ConflictError(`Endpoint '${endpoint.slug}' is archived: unarchive it to ${action} it`);
  }
}

function requiredIds(ids: string[] | null | undefined, allFlag: string): string[] {
  if (!ids) throw ValidationError.body('marketplace_ids', `Field required unless ${allFlag} is true`, 'missing');
  return [...new Set(ids)];
}

function failure(id: string, name: string, message: string, error: string): Result {
  return { marketplace_id: id, marketplace_name: name, success: false, message, error };
}
