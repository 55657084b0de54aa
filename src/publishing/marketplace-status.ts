import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import { requirePrincipal } from '../http/principal.ts';
import { IdParams } from '../http/schemas.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { HeartbeatResult } from './heartbeat.ts';

export const MarketplaceStatusView = Type.Object({
  marketplace_id: Type.String(),
  /** knode holds a logged-in session with the hub (it logs in on first use, then keeps the session). */
  logged_in: Type.Boolean(),
  /** The last health report sent to the hub since knode started, and whether the hub took it. */
  last_heartbeat: Type.Union([
    Type.Object({ at: Type.String(), ok: Type.Boolean(), error: Type.Union([Type.String(), Type.Null()]) }),
    Type.Null(),
  ]),
  /** Slugs of the tenant's endpoints published there. */
  published_endpoints: Type.Array(Type.String()),
  /**
   * This knode's satellite at the hub (API-CONTRACT 9.1): the audience of the hub's tokens for it. Null on a
   * hub without the registry, before the tenant has a public URL, or while its registration is retried.
   */
  satellite_id: Type.Union([Type.String(), Type.Null()]),
});

export interface MarketplaceStatusDeps {
  marketplaces: Pick<MarketplaceRepository, 'get'>;
  endpoints: Pick<EndpointRepository, 'listPublishedTo'>;
  hubs: Pick<HubClients, 'loggedIn'>;
  heartbeats: { lastHeartbeat(marketplaceId: string): HeartbeatResult | undefined };
}

/** How a marketplace is doing, as the console shows it: its session, its last heartbeat, what is published there. */
export async function marketplaceStatus(deps: MarketplaceStatusDeps, tenant: Tenant, id: string) {
  const marketplace = await deps.marketplaces.get(tenant.id, id);
  if (!marketplace) throw new NotFoundError(`Marketplace '${id}' not found`);
  const heartbeat = deps.heartbeats.lastHeartbeat(marketplace.id);
  return {
    marketplace_id: marketplace.id,
    logged_in: deps.hubs.loggedIn(marketplace.id),
    last_heartbeat: heartbeat ? { ...heartbeat } : null,
    published_endpoints: (await deps.endpoints.listPublishedTo(tenant.id, marketplace.id)).map((endpoint) => endpoint.slug).sort(),
    satellite_id: marketplace.satellite_id,
  };
}

/** GET /marketplaces/{id}/status. */
export function marketplaceStatusRoutes(deps: MarketplaceStatusDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/marketplaces/:id/status', {
      config: { auth: 'tenant' },
      schema: { tags: ['marketplaces'], params: IdParams, response: { 200: MarketplaceStatusView } },
      handler: async (request) => marketplaceStatus(deps, requirePrincipal(request).tenant, request.params.id),
    });
  };
}
