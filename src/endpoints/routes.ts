import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { rejectImmutableFields } from '../http/immutable-fields.ts';
import { listAnswer, listOf, windowOf } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { MessageBody } from '../http/schemas.ts';
import {
  ArchiveBody,
  CreatedEndpointView,
  CreateEndpointBody,
  EndpointDetail,
  EndpointListItem,
  EndpointListQuery,
  SlugParams,
  UpdateEndpointBody,
} from './schemas.ts';
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
      schema: { tags, querystring: EndpointListQuery, response: { 200: listOf(EndpointListItem) } },
      handler: async (request) => {
        const window = windowOf(request.query);
        return listAnswer(await endpoints.list(requirePrincipal(request).tenant, window, request.query.archived ?? 'false'), window);
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

    // Archive and unarchive (API-CONTRACT 4, "Archive"): both answer the endpoint, and both may be repeated.
    const archiving = {
      ...common,
      // `curl -X POST .../archive` sends no body: that is the empty object; a body that is not an object is a 422.
      preValidation: async (request: { body: unknown }) => {
        request.body ??= {};
      },
      schema: { tags, params: SlugParams, body: ArchiveBody, response: { 200: EndpointDetail } },
    };
    app.post('/endpoints/:slug/archive', {
      ...archiving,
      handler: async (request) => endpoints.archive(requirePrincipal(request).tenant, request.params.slug),
    });
    app.post('/endpoints/:slug/unarchive', {
      ...archiving,
      handler: async (request) => endpoints.unarchive(requirePrincipal(request).tenant, request.params.slug),
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
