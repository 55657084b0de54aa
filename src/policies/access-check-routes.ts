import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Configuration } from '../http/schemas.ts';
import { matchesPattern } from './access.ts';
import type { AccessConfiguration } from './codec.ts';
import { normalizePolicySettings } from './configuration.ts';
import { AccessCheckView } from './schemas.ts';

const AccessCheckBody = Type.Object({
  /** An access policy's configuration, checked as creating the policy would check it. */
  configuration: Configuration,
  email: Type.String({ minLength: 1, maxLength: 254 }),
});

/**
 * `POST /api/v1/policies/access/check`: would this e-mail pass this access configuration? The same
 * matching as a query's pre-hook (plain e-mails literally, other patterns as whole-string RE2 expressions),
 * so the console's "would this e-mail pass?" never disagrees with the endpoint. Nothing is stored.
 */
export function accessCheckRoutes(): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/policies/access/check', {
      config: { auth: 'tenant' },
      schema: { tags: ['policies'], body: AccessCheckBody, response: { 200: AccessCheckView } },
      handler: async (request) => {
        const { configuration } = normalizePolicySettings('access', request.body.configuration) as {
          configuration: AccessConfiguration;
        };
        const email = request.body.email.trim();
        const matched = configuration.patterns.find((pattern) => matchesPattern(email, pattern)) ?? null;
        return { allowed: configuration.mode === 'allow' ? matched !== null : matched === null, matched_pattern: matched };
      },
    });
  };
}
