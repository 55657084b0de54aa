import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { rejectImmutableFields } from '../http/immutable-fields.ts';
import { listAnswer, listOf, PageQuery, windowOf } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams, MessageBody } from '../http/schemas.ts';
import { CreatePolicyBody, PolicyListQuery, PolicySummary, PolicyView, UpdatePolicyBody } from './schemas.ts';
import type { PolicyService } from './service.ts';

const common = { config: { auth: 'tenant' as const } };
const tags = ['policies'];

/** The policy routes under /api/v1. */
export function policyRoutes(policies: PolicyService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/policies/', {
      ...common,
      schema: { tags, body: CreatePolicyBody, response: { 201: PolicyView } },
      handler: async (request, reply) => {
        reply.code(201);
        return policies.create(requirePrincipal(request).tenant, request.body);
      },
    });

    app.get('/policies', {
      ...common,
      schema: { tags, querystring: PolicyListQuery, response: { 200: listOf(PolicyView) } },
      handler: async (request) => {
        const window = windowOf(request.query);
        return listAnswer(await policies.list(requirePrincipal(request).tenant, request.query.endpoint_id, window), window);
      },
    });

    app.get('/policies/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: PolicyView } },
      handler: async (request) => policies.get(requirePrincipal(request).tenant, request.params.id),
    });

    app.patch('/policies/:id', {
      ...common,
      preValidation: rejectImmutableFields(['policy_type', 'endpoint_id']),
      schema: { tags, params: IdParams, body: UpdatePolicyBody, response: { 200: PolicyView } },
      handler: async (request) => policies.update(requirePrincipal(request).tenant, request.params.id, request.body),
    });

    app.delete('/policies/:id', {
      ...common,
      schema: { tags, params: IdParams, response: { 200: MessageBody } },
      handler: async (request) => {
        await policies.delete(requirePrincipal(request).tenant, request.params.id);
        return { message: `Policy '${request.params.id}' deleted` };
      },
    });
  };
}

/** `GET /policies/` at the root, as the specification lists it: the tenant's policies without configuration. */
export function rootPolicyRoutes(policies: PolicyService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/policies/', {
      ...common,
      schema: { tags, querystring: PageQuery, response: { 200: listOf(PolicySummary) } },
      handler: async (request) => {
        const window = windowOf(request.query);
        return listAnswer(await policies.list(requirePrincipal(request).tenant, undefined, window), window);
      },
    });
  };
}
