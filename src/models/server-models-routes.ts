import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ValidationError } from '../domain/errors.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { BaseUrl } from '../http/schemas.ts';
import { listServerModels, type ServerModels } from '../llm/server-models.ts';
import { ONE_MEGABYTE, outboundFetch } from '../outbound/fetch.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import { DiscoverView } from './schemas.ts';

const DiscoverBody = Type.Object({
  base_url: BaseUrl,
  api_key: Type.Optional(Type.String({ maxLength: 2000 })),
});

/** Long enough for a remote server, short enough that a console waiting on a dead address is not stuck. */
const DISCOVERY_TIMEOUT_MS = 5000;

/**
 * `POST /api/v1/models/discover {base_url, api_key?}`: the models an OpenAI-compatible server serves, so the
 * console offers a list instead of a text box (and finds a local Ollama). POST because it carries a key.
 */
export function serverModelRoutes(outbound: OutboundPolicy, list: typeof listServerModels = listServerModels): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/models/discover', {
      config: { auth: 'tenant' },
      schema: { tags: ['models'], body: DiscoverBody, response: { 200: DiscoverView } },
      handler: async (request) => {
        const baseUrl = request.body.base_url.replace(/\/+$/, '');
        const reach = await outbound.forPrincipal(requirePrincipal(request));
        // An address refused whatever it resolves to is a mistake in the field; one found by DNS is a 403 below.
        const refused = reach.hostRefusal(new URL(baseUrl).hostname);
        if (refused) throw ValidationError.body('base_url', refused, 'url_refused');
        // A model list the size of OpenRouter's (with descriptions) passes; a server sending more is cut off.
        const fetcher = outboundFetch(reach, { maxBytes: 4 * ONE_MEGABYTE, timeoutMs: DISCOVERY_TIMEOUT_MS });
        const found: ServerModels = await list(baseUrl, request.body.api_key || undefined, DISCOVERY_TIMEOUT_MS, fetcher);
        return found.reachable
          ? { base_url: baseUrl, reachable: true, models: found.models, error: null }
          : { base_url: baseUrl, reachable: false, models: [], error: found.error };
      },
    });
  };
}
