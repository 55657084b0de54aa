import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams } from '../http/schemas.ts';
import type { MarketplaceRepository } from '../marketplaces/repository.ts';
import type { HubClients } from '../syfthub/hub-client.ts';
import type { HeartbeatResult } from './heartbeat.ts';
import { MarketplaceStatusView } from './schemas.ts';

export interface MarketplaceStatusDeps {
  marketplaces: Pick<MarketplaceRepository, 'get'>;
  endpoints: Pick<EndpointRepository, 'listPublishedTo'>;
  hubs: Pick<HubClients, 'loggedIn'>;
  heartbeats: { lastHeartbeat(marketplaceId: string): HeartbeatResult | undefined };
}

/** How a marketplace is doing, as the console shows it: its session, its last heartbeat, what is published there. */
async function marketplaceStatus(deps: MarketplaceStatusDeps, tenant: Tenant, id: string) {
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
