import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Issues } from '../http/issues.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import type { TunnelManager } from './manager.ts';
import { TunnelView } from './schemas.ts';

/**
 * Either the ngrok authtoken to connect with (the specification's body), or `from_marketplace: true`: the
 * tenant's default marketplace hands one out (SyftHub's tunnel credentials, API-CONTRACT 9.1). Both optional
 * here so that a body without either is worded as the specification's missing `tunnel_token`.
 */
const TunnelBody = Type.Object({
  tunnel_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'An ngrok authtoken; stored encrypted' })),
  from_marketplace: Type.Optional(
    Type.Boolean({
      description: "true: the tenant's default marketplace hands out the credential and names the host (SyftHub's tunnel credentials)",
    }),
  ),
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
      handler: async (request) => {
        const { tenant } = requirePrincipal(request);
        const { tunnel_token: token, from_marketplace: fromMarketplace } = request.body;
        const issues = new Issues();
        if (fromMarketplace && token !== undefined)
          issues.add('from_marketplace', 'Send either tunnel_token or from_marketplace, not both');
        if (!fromMarketplace && token === undefined) issues.add('tunnel_token', 'Field required', 'missing');
        issues.throwIfAny();
        return token === undefined ? tunnels.openFromMarketplace(tenant) : tunnels.open(tenant, token);
      },
    });

    app.delete('/settings/proxy', {
      ...common,
      schema: { tags, response: { 200: TunnelView } },
      handler: async (request) => tunnels.close(requirePrincipal(request).tenant),
    });
  };
}
