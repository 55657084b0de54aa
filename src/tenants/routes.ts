import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import { MessageBody } from '../http/schemas.ts';
import { AddMemberBody, MemberParams, MemberView, TenantParams, TenantView, UpdateTenantBody } from './schemas.ts';
import type { TenantService } from './service.ts';

export function tenantRoutes(tenants: TenantService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['tenants'];

    app.get('/tenants/:name', {
      ...common,
      schema: { tags, params: TenantParams, response: { 200: TenantView } },
      handler: async (request) => tenants.get(requirePrincipal(request), request.params.name),
    });

    // Only the operator grants folders: the admin key, or this machine in development mode; never a user's token.
    app.patch('/tenants/:name', {
      config: { auth: 'operator' as const },
      schema: { tags, params: TenantParams, body: UpdateTenantBody, response: { 200: TenantView } },
      handler: async (request) => tenants.grantRoots(request.params.name, request.body.ingestion_roots),
    });

    app.post('/tenants/:name/members', {
      ...common,
      schema: { tags, params: TenantParams, body: AddMemberBody, response: { 201: MemberView } },
      handler: async (request, reply) => {
        reply.code(201);
        return tenants.addMember(requirePrincipal(request), request.params.name, request.body.email);
      },
    });

    app.delete('/tenants/:name/members/:email', {
      ...common,
      schema: { tags, params: MemberParams, response: { 200: MessageBody } },
      handler: async (request) => {
        await tenants.removeMember(requirePrincipal(request), request.params.name, request.params.email);
        return { message: `'${request.params.email}' is no longer a member of '${request.params.name}'` };
      },
    });

    app.get('/tenants/:name/members', {
      ...common,
      schema: { tags, params: TenantParams, response: { 200: Type.Array(MemberView) } },
      handler: async (request) => tenants.listMembers(requirePrincipal(request), request.params.name),
    });
  };
}
