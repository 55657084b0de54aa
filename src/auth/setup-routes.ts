import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../config.ts';
import { registrationOpenTo } from './guard.ts';
import { SetupView } from './schemas.ts';

/**
 * `GET /api/v1/auth/setup`: what the console's first page needs to know before anyone is logged in:
 * whether to offer the owner's account (first run) or the login form.
 */
export function setupRoutes(config: Config, users: { hasUsers(): Promise<boolean> }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/auth/setup', {
      config: { auth: 'public' },
      schema: { tags: ['auth'], response: { 200: SetupView } },
      handler: async (request) => ({
        has_users: await users.hasUsers(),
        registration_open: registrationOpenTo(config, request),
      }),
    });
  };
}
