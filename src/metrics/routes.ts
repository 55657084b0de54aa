import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Metrics } from './metrics.ts';

/**
 * GET /metrics: the Prometheus text format. Instance-wide figures (every tenant's endpoints and traffic), so
 * it is the operator's: the admin key when one is set; in development mode, requests made directly on this
 * machine without a token. A user's token never reads it, in development mode neither (any tenant's user
 * would see every tenant), nor does anything through the tunnel. Not counted against the general API
 * limits: a scraper calls it often.
 */
export function metricsRoutes(metrics: Metrics): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/metrics', {
      config: { auth: 'operator', counted: false },
      schema: { tags: ['metrics'], hide: true },
      handler: async (_request, reply) => {
        const { contentType, body } = await metrics.text();
        return reply.type(contentType).send(body);
      },
    });
  };
}
