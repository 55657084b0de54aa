import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Principal, Tenant } from '../domain/principal.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { MessageBody } from '../http/schemas.ts';
import { WalletBody, WalletView } from './schemas.ts';
import type { WalletService } from './service.ts';

/** Who may change where a tenant's money goes (tenants/service.ts implements it). */
export interface WalletOwners {
  requireOwner(principal: Principal, tenant: Tenant, what: string): Promise<void>;
}

/**
 * `/settings/wallet`: the tenant's payment wallet (API-CONTRACT 10.3). Every member may see it; only the
 * tenant's owner (or the admin key, with X-Tenant-Name) may set or remove it: a member who could would
 * send the tenant's payments to their own address.
 */
export function walletRoutes(wallets: WalletService, owners: WalletOwners): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['settings'];

    app.get('/settings/wallet', {
      ...common,
      schema: { tags, response: { 200: WalletView } },
      handler: async (request) => wallets.get(requirePrincipal(request).tenant),
    });

    app.post('/settings/wallet', {
      ...common,
      schema: { tags, body: WalletBody, response: { 200: WalletView } },
      handler: async (request) => {
        const principal = requirePrincipal(request);
        await owners.requireOwner(principal, principal.tenant, 'changes its payment wallet');
        return wallets.set(principal.tenant, request.body);
      },
    });

    app.delete('/settings/wallet', {
      ...common,
      schema: { tags, response: { 200: MessageBody } },
      handler: async (request) => {
        const principal = requirePrincipal(request);
        await owners.requireOwner(principal, principal.tenant, 'removes its payment wallet');
        await wallets.delete(principal.tenant);
        return { message: 'Payment wallet removed' };
      },
    });
  };
}
