import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import {
  AnalyticsQuery,
  AnalyticsSeriesView,
  AnalyticsSummaryView,
  SeriesQuery,
  TermsQuery,
  TermsView,
  TopUsersQuery,
  TopUsersView,
} from './schemas.ts';
import type { AnalyticsService } from './service.ts';

/** GET /api/v1/analytics/{summary,series,top-users,terms}: the tenant's (JWT or admin key); terms its owner's only. */
export function analyticsRoutes(analytics: AnalyticsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const config = { auth: 'tenant' as const };

    app.get('/analytics/summary', {
      config,
      schema: { tags: ['analytics'], querystring: AnalyticsQuery, response: { 200: AnalyticsSummaryView } },
      handler: async (request) => analytics.summary(requirePrincipal(request).tenant, request.query),
    });

    app.get('/analytics/series', {
      config,
      schema: { tags: ['analytics'], querystring: SeriesQuery, response: { 200: AnalyticsSeriesView } },
      handler: async (request) => analytics.series(requirePrincipal(request).tenant, request.query),
    });

    app.get('/analytics/top-users', {
      config,
      schema: { tags: ['analytics'], querystring: TopUsersQuery, response: { 200: TopUsersView } },
      handler: async (request) => analytics.topUsers(requirePrincipal(request).tenant, request.query),
    });

    app.get('/analytics/terms', {
      config,
      schema: { tags: ['analytics'], querystring: TermsQuery, response: { 200: TermsView } },
      handler: async (request) => analytics.terms(requirePrincipal(request), request.query),
    });
  };
}
