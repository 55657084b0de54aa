import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { SlugParams } from '../endpoints/schemas.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { PublicationAnswer, PublishBody, SyncAnswer, SyncBody, UnpublishBody } from './schemas.ts';
import type { PublishingService } from './service.ts';

/**
 * Publish, unpublish and batch sync (API-CONTRACT 4). `POST /endpoints/sync` is a static route: the
 * router prefers it to `/endpoints/:slug`, and an endpoint whose slug is "sync" still has its own
 * `/endpoints/sync/publish`, `/unpublish` and `/query` (static and parametric routes backtrack).
 */
export function publishingRoutes(publishing: PublishingService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['endpoints'];

    app.post('/endpoints/sync', {
      ...common,
      // The body is optional: `curl -X POST .../endpoints/sync` syncs everything.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: { tags, body: SyncBody, response: { 200: SyncAnswer } },
      handler: async (request) => publishing.sync(requirePrincipal(request).tenant, request.body.marketplace_ids),
    });

    app.post('/endpoints/:slug/publish', {
      ...common,
      schema: { tags, params: SlugParams, body: PublishBody, response: { 200: PublicationAnswer } },
      handler: async (request) => publishing.publish(requirePrincipal(request).tenant, request.params.slug, request.body),
    });

    app.post('/endpoints/:slug/unpublish', {
      ...common,
      schema: { tags, params: SlugParams, body: UnpublishBody, response: { 200: PublicationAnswer } },
      handler: async (request) => publishing.unpublish(requirePrincipal(request).tenant, request.params.slug, request.body),
    });
  };
}
