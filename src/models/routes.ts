import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { rejectImmutableFields } from '../http/immutable-fields.ts';
import { listAnswer, listOf, PageQuery, windowOf } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams, MessageBody } from '../http/schemas.ts';
import type { ModelRunnerService } from './runner.ts';
import { CreateModelBody, ModelHealthView, ModelTestBody, ModelView, SummaryView, UpdateModelBody } from './schemas.ts';
import type { ModelService } from './service.ts';

export function modelRoutes(models: ModelService, runner: ModelRunnerService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['models'];

    app.post('/models/', {
      ...common,
      schema: { tags, body: CreateModelBody, response: { 201: ModelView } },
      handler: async (request, reply) => {
        reply.code(201);
        return models.create(requirePrincipal(request).tenant, request.body);
      },
    });

    app.get('/models/', {
      ...common,
      schema: { tags, querystring: PageQuery, response: { 200: listOf(ModelView) } },
      handler: async (request) => {
        const window = windowOf(request.query);
        return listAnswer(await models.list(requirePrincipal(request).tenant, window), window);
      },
    });

    app.get('/models/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: ModelView } },
      handler: async (request) => models.get(requirePrincipal(request).tenant, request.params.id),
    });

    app.patch('/models/:id', {
      ...common,
      preValidation: rejectImmutableFields(['dtype']),
      schema: { tags, params: IdParams, body: UpdateModelBody, response: { 200: ModelView } },
      handler: async (request) => models.update(requirePrincipal(request).tenant, request.params.id, request.body),
    });

    app.delete('/models/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: MessageBody } },
      handler: async (request) => {
        await models.delete(requirePrincipal(request).tenant, request.params.id);
        return { message: `Model '${request.params.id}' deleted` };
      },
    });

    app.get('/models/:id/health', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: ModelHealthView } },
      handler: async (request) => runner.health(requirePrincipal(request).tenant, request.params.id, AbortSignal.timeout(30_000)),
    });

    app.post('/models/:id/test', {
      ...common,
      // The body is optional: a bare POST tests with the default prompt.
      preValidation: async (request) => {
        request.body ??= {} as typeof request.body;
      },
      schema: { tags, params: IdParams, body: ModelTestBody, response: { 200: SummaryView } },
      handler: async (request) =>
        runner.chat(requirePrincipal(request).tenant, request.params.id, [{ role: 'user', content: request.body.prompt }], {
          max_tokens: request.body.max_tokens,
          temperature: 0.7,
          stop_sequences: [],
          presence_penalty: 0,
          frequency_penalty: 0,
        }),
    });
  };
}
