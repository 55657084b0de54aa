import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/principal.ts';
import { AddMemberBody, MemberView, TenantParams } from './schemas.ts';
import type { TenantService } from './service.ts';

export function tenantRoutes(tenants: TenantService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['tenants'];

    app.post('/tenants/:name/members', {
      ...common,
      schema: { tags, params: TenantParams, body: AddMemberBody, response: { 201: MemberView } },
      handler: async (request, reply) => {
        reply.code(201);
        return tenants.addMember(requirePrincipal(request), request.params.name, request.body.email);
      },
    });

    app.get('/tenants/:name/members', {
      ...common,
      schema: { tags, params: TenantParams, response: { 200: Type.Array(MemberView) } },
      handler: async (request) => tenants.listMembers(requirePrincipal(request), request.params.name),
    });
  };
}
