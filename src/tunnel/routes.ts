import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/principal.ts';
import type { TunnelManager } from './manager.ts';

const TunnelBody = Type.Object({ tunnel_token: Type.String({ minLength: 1, maxLength: 4096 }) });

const TunnelView = Type.Object({
  connected: Type.Boolean(),
  public_url: Type.Union([Type.String(), Type.Null()]),
  has_token: Type.Boolean(),
  state: Type.Enum(['stopped', 'online', 'reconnecting']),
  retry_in_seconds: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});

/** /settings/proxy: the tenant's tunnel (specification, Settings rules 3 to 5). */
export function tunnelRoutes(tunnels: TunnelManager): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'admin' as const } };
    const tags = ['settings'];

    app.get('/settings/proxy', {
      ...common,
      schema: { tags, response: { 200: TunnelView } },
      handler: async (request) => tunnels.status(requirePrincipal(request).tenant),
    });

    app.post('/settings/proxy', {
      ...common,
      schema: { tags, body: TunnelBody, response: { 200: TunnelView } },
      handler: async (request) => tunnels.open(requirePrincipal(request).tenant, request.body.tunnel_token),
    });

    app.delete('/settings/proxy', {
      ...common,
      schema: { tags, response: { 200: TunnelView } },
      handler: async (request) => tunnels.close(requirePrincipal(request).tenant),
    });
  };
}
