import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import type { PublicUrlService } from './public-url.ts';
import { PublicUrlBody, PublicUrlView } from './public-url-schemas.ts';

export function publicUrlRoutes(settings: PublicUrlService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'admin' as const } };
    const tags = ['settings'];

    app.get('/settings/public-url', {
      ...common,
      schema: { tags, response: { 200: PublicUrlView } },
      handler: async (request) => settings.publicUrl(requirePrincipal(request).tenant),
    });

    app.patch('/settings/public-url', {
      ...common,
      schema: { tags, body: PublicUrlBody, response: { 200: PublicUrlView } },
      handler: async (request) => settings.setPublicUrl(requirePrincipal(request).tenant, request.body.public_url),
    });
  };
}
