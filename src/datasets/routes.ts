import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { rejectImmutableFields } from '../http/immutable-fields.ts';
import { DEFAULT_PAGE_LIMIT, listAnswer, listOf, PageQuery, wantsPage, windowOf } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams, MessageBody } from '../http/schemas.ts';
import { CreateDatasetBody, DatasetFileView, DatasetView, ProvisionerView, UpdateDatasetBody } from './schemas.ts';
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
      handler: async (request) => {
        const window = windowOf(request.query);
        return listAnswer(await datasets.list(requirePrincipal(request).tenant, window), window);
      },
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

    app.get('/datasets/provisioners/', {
      ...common,
      schema: { tags, response: { 200: Type.Array(ProvisionerView) } },
      handler: async (request) => datasets.provisioners(requirePrincipal(request).tenant),
    });

    app.get('/datasets/:id/files', {
      ...common,
      schema: { tags, params: IdParams, querystring: PageQuery, response: { 200: listOf(DatasetFileView) } },
      handler: async (request) => {
        const paged = wantsPage(request.query);
        const skip = request.query.skip ?? 0;
        // The plain array lists every file; the envelope pages them.
        const limit = paged ? (request.query.limit ?? DEFAULT_PAGE_LIMIT) : Number.MAX_SAFE_INTEGER;
        const { items, total } = await datasets.listFiles(requirePrincipal(request).tenant, request.params.id, skip, limit);
        return paged ? { items, total, skip, limit } : items;
      },
    });

    app.post('/datasets/:id/reindex', {
      ...common,
      schema: { tags, params: IdParams, response: { 202: MessageBody } },
      handler: async (request, reply) => {
        await datasets.reindex(requirePrincipal(request).tenant, request.params.id);
        reply.code(202);
        return { message: 'Every file of the dataset is queued to be indexed again' };
      },
    });

    app.post('/datasets/:id/stop', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: DatasetView } },
      handler: async (request) => datasets.stop(requirePrincipal(request).tenant, request.params.id),
    });

    app.post('/datasets/:id/start', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: DatasetView } },
      handler: async (request) => datasets.start(requirePrincipal(request).tenant, request.params.id),
    });
  };
}
