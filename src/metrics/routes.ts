import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Metrics } from './metrics.ts';

/**
 * GET /metrics: the Prometheus text format. Instance-wide figures (every tenant's), so it is an admin
 * route: the admin key when one is set; in development mode, requests made directly on this machine
 * (like the other admin routes). Not counted against the general API limits: a scraper calls it often.
 */
export function metricsRoutes(metrics: Metrics): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/metrics', {
      config: { auth: 'admin', counted: false },
      schema: { tags: ['metrics'], hide: true },
      handler: async (_request, reply) => {
        const { contentType, body } = await metrics.text();
        return reply.type(contentType).send(body);
      },
    });
  };
}
