import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Tenant } from '../domain/principal.ts';
import { SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX } from '../http/field-bounds.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams } from '../http/schemas.ts';
import { ReferencesView } from './schemas.ts';
import type { References, SearchOptions } from './search.ts';

const SearchBody = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 10_000, pattern: '\\S' }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_LIMIT_MAX, default: SEARCH_LIMIT_DEFAULT })),
  similarity_threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 0 })),
  mode: Type.Optional(Type.Enum(['hybrid', 'vector', 'keyword'], { default: 'hybrid' })),
});

/** What the route needs: datasets/search.ts, the search step of queries. */
export interface DatasetSearch {
  search(tenant: Tenant, datasetId: string, text: string, options: SearchOptions): Promise<References>;
}

/**
 * `POST /api/v1/datasets/{id}/search`: searches a dataset directly, as a query of a `raw` endpoint would
 * (same ranking, calibrated scores and metadata), so its owner can try it before making an endpoint.
 */
export function datasetSearchRoutes(search: DatasetSearch): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/datasets/:id/search', {
      config: { auth: 'tenant' },
      schema: { tags: ['datasets'], params: IdParams, body: SearchBody, response: { 200: ReferencesView } },
      handler: async (request) => {
        const { query, limit = SEARCH_LIMIT_DEFAULT, similarity_threshold = 0, mode = 'hybrid' } = request.body;
        return search.search(requirePrincipal(request).tenant, request.params.id, query, {
          limit,
          similarityThreshold: similarity_threshold,
          mode,
          includeMetadata: true,
        });
      },
    });
  };
}
