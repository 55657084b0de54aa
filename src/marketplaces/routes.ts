import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listOf, PageQuery, pageOf } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams, MessageBody } from '../http/schemas.ts';
import { CreateMarketplaceBody, MarketplaceView, UpdateMarketplaceBody } from './schemas.ts';
import type { MarketplaceService } from './service.ts';

export function marketplaceRoutes(marketplaces: MarketplaceService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['marketplaces'];

    app.post('/marketplaces/', {
      ...common,
      schema: { tags, body: CreateMarketplaceBody, response: { 201: MarketplaceView } },
      handler: async (request, reply) => {
        reply.code(201);
        return marketplaces.create(requirePrincipal(request).tenant, request.body);
      },
    });

    app.get('/marketplaces/', {
      ...common,
      schema: { tags, querystring: PageQuery, response: { 200: listOf(MarketplaceView) } },
      handler: async (request) => pageOf(await marketplaces.list(requirePrincipal(request).tenant), request.query),
    });

    app.get('/marketplaces/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: MarketplaceView } },
      handler: async (request) => marketplaces.get(requirePrincipal(request).tenant, request.params.id),
    });

    app.patch('/marketplaces/:id', {
      ...common,
      schema: { tags, params: IdParams, body: UpdateMarketplaceBody, response: { 200: MarketplaceView } },
      handler: async (request) => marketplaces.update(requirePrincipal(request).tenant, request.params.id, request.body),
    });

    app.delete('/marketplaces/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: MessageBody } },
      handler: async (request) => {
        await marketplaces.delete(requirePrincipal(request).tenant, request.params.id);
        return { message: `Marketplace '${request.params.id}' deleted` };
      },
    });
  };
}
