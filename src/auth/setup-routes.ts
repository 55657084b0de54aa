import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.ts';
import { isDirectLocal } from '../http/client.ts';

const SetupView = Type.Object({
  /** False until the first user registers: the console then offers to create the owner's account. */
  has_users: Type.Boolean(),
  /** Whether this very client may register without the admin key (the rule of `POST /auth/register`). */
  registration_open: Type.Boolean(),
});

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
        // As the credential guard decides registrations (auth/guard.ts, mode `registration`).
        registration_open: config.openRegistration && (config.adminApiKey !== '' || isDirectLocal(request)),
      }),
    });
  };
}
