import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams } from '../http/schemas.ts';
import { FeedStateView } from './feed-schemas.ts';
import type { DatasetService } from './service.ts';

/** `GET /api/v1/datasets/{id}/feeds`: each feed of an `rss` dataset, when it was polled and why it failed (empty for another type). */
export function feedRoutes(datasets: DatasetService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/datasets/:id/feeds', {
      config: { auth: 'tenant' as const },
      schema: { tags: ['datasets'], params: IdParams, response: { 200: Type.Array(FeedStateView) } },
      handler: async (request) => datasets.feeds(requirePrincipal(request).tenant, request.params.id),
    });
  };
}
