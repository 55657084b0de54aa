import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { rejectImmutableFields } from '../http/immutable-fields.ts';
import { listOf, pageOf, PageQuery } from '../http/pagination.ts';
import { requirePrincipal } from '../http/principal.ts';
import { IdParams, MessageBody } from '../http/schemas.ts';
import { CreateDatasetBody, DatasetView, UpdateDatasetBody } from './schemas.ts';
import type { DatasetService } from './service.ts';

export function datasetRoutes(datasets: DatasetService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['datasets'];

    app.post('/datasets/', {
      ...common,
      schema: { tags, body: CreateDatasetBody, response: { 201: DatasetView } },
      handler: async (request, reply) => {
        reply.code(201);
        return datasets.create(requirePrincipal(request).tenant, request.body);
      },
    });

    app.get('/datasets/', {
      ...common,
      schema: { tags, querystring: PageQuery, response: { 200: listOf(DatasetView) } },
      handler: async (request) => pageOf(await datasets.list(requirePrincipal(request).tenant), request.query),
    });

    app.get('/datasets/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: DatasetView } },
      handler: async (request) => datasets.get(requirePrincipal(request).tenant, request.params.id),
    });

    app.patch('/datasets/:id', {
      ...common,
      preValidation: rejectImmutableFields(['dtype', 'configuration']),
      schema: { tags, params: IdParams, body: UpdateDatasetBody, response: { 200: DatasetView } },
      handler: async (request) => datasets.update(requirePrincipal(request).tenant, request.params.id, request.body),
    });

    app.delete('/datasets/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: MessageBody } },
      handler: async (request) => {
        await datasets.delete(requirePrincipal(request).tenant, request.params.id);
        return { message: `Dataset '${request.params.id}' deleted` };
      },
    });
  };
}
