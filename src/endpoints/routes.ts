import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { rejectImmutableFields } from '../http/immutable-fields.ts';
import { listAnswer, listOf, PageQuery, windowOf } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { MessageBody } from '../http/schemas.ts';
import { CreatedEndpointView, CreateEndpointBody, EndpointDetail, EndpointListItem, SlugParams, UpdateEndpointBody } from './schemas.ts';
import type { EndpointService } from './service.ts';

const IMMUTABLE = ['slug', 'dataset_id', 'model_id', 'response_type', 'published', 'tags'];

export function endpointRoutes(endpoints: EndpointService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['endpoints'];

    app.post('/endpoints/', {
      ...common,
      schema: { tags, body: CreateEndpointBody, response: { 201: CreatedEndpointView } },
      handler: async (request, reply) => {
        reply.code(201);
        return endpoints.create(requirePrincipal(request).tenant, request.body);
      },
    });

    app.get('/endpoints/', {
      ...common,
      schema: { tags, querystring: PageQuery, response: { 200: listOf(EndpointListItem) } },
      handler: async (request) => {
        const window = windowOf(request.query);
        return listAnswer(await endpoints.list(requirePrincipal(request).tenant, window), window);
      },
    });

    app.get('/endpoints/:slug', {
      ...common,
      schema: { tags, params: SlugParams, response: { 200: EndpointDetail } },
      handler: async (request) => endpoints.get(requirePrincipal(request).tenant, request.params.slug),
    });

    app.patch('/endpoints/:slug', {
      ...common,
      preValidation: rejectImmutableFields(IMMUTABLE),
      schema: { tags, params: SlugParams, body: UpdateEndpointBody, response: { 200: EndpointDetail } },
      handler: async (request) => endpoints.update(requirePrincipal(request).tenant, request.params.slug, request.body),
    });

    app.delete('/endpoints/:slug', {
      ...common,
      schema: { tags, params: SlugParams, response: { 200: MessageBody } },
      handler: async (request) => {
        const row = await endpoints.delete(requirePrincipal(request).tenant, request.params.slug);
        return { message: `Endpoint '${row.slug}' deleted` };
      },
    });
  };
}
