import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requirePrincipal } from '../http/principal.ts';
import { MessageBody } from '../http/schemas.ts';
import { WalletBody, WalletView } from './schemas.ts';
import type { WalletService } from './service.ts';

/**
 * `/settings/wallet`: the tenant's payment wallet (API-CONTRACT 10.3). Money goes there, so it belongs to
 * the tenant like its marketplace accounts: a member's token or the admin key (with X-Tenant-Name).
 */
export function walletRoutes(wallets: WalletService): FastifyPluginAsyncTypebox {
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
      handler: async (request) => wallets.set(requirePrincipal(request).tenant, request.body),
    });

    app.delete('/settings/wallet', {
      ...common,
      schema: { tags, response: { 200: MessageBody } },
      handler: async (request) => {
        await wallets.delete(requirePrincipal(request).tenant);
        return { message: 'Payment wallet removed' };
      },
    });
  };
}
