import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import { StorageView } from './schemas.ts';
import type { StorageService } from './storage-service.ts';

/** GET /settings/storage: where knode keeps its data and what each of the tenant's datasets takes. */
export function storageRoutes(storage: StorageService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/settings/storage', {
      config: { auth: 'tenant' },
      schema: { tags: ['settings'], response: { 200: StorageView } },
      handler: async (request) => storage.report(requirePrincipal(request)),
    });
  };
}
