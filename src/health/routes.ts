import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { VERSION } from '../version.ts';

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/health', {
    config: { auth: 'public', counted: false },
    schema: { tags: ['health'], response: { 200: Type.Object({ status: Type.String(), version: Type.String() }) } },
    handler: async () => ({ status: 'ok', version: VERSION }),
  });
};
