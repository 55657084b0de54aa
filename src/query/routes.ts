import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { SlugParams } from '../endpoints/schemas.ts';
import { clientIp } from '../http/client.ts';
import { DEFAULT_PAGE_LIMIT, listOf, PageQuery, wantsPage } from '../http/pagination.ts';
import { requirePrincipal } from '../http/route-principal.ts';
import { type QueryPipeline, queryCaller } from './pipeline.ts';
import { QueryBody, QueryHeaders, QueryResponse, UsageRecordView, UsageSummaryQuery, UsageSummaryView } from './schemas.ts';
import { sendStream } from './stream.ts';
import type { UsageService } from './usage-service.ts';

export function queryRoutes(pipeline: QueryPipeline, usage: UsageService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/endpoints/:slug/query', {
      // Public queries are counted per caller by the pipeline, not per tenant by the general hook.
      config: { auth: 'query', counted: false },
      schema: { tags: ['query'], params: SlugParams, headers: QueryHeaders, body: QueryBody, response: { 200: QueryResponse } },
      handler: async (request, reply) => {
        const caller = queryCaller(requirePrincipal(request), clientIp(request), request.headers['x-knode-origin']);
        const signal = abortedOnClose(reply);
        const query = await pipeline.begin(caller, request.params.slug, request.body, request.headers['x-payment']);
        if (!request.body.stream) return query.answer(signal);
        // Until the events are handed over, a failure is an ordinary HTTP error (running-query.ts `stream`).
        await sendStream(reply, await query.stream(signal), signal, request.log, pipeline.clock);
        return reply;
      },
    });

    app.get('/endpoints/:slug/usage', {
      config: { auth: 'tenant' },
      schema: {
        tags: ['query'],
        params: SlugParams,
        querystring: PageQuery,
        response: { 200: listOf(UsageRecordView) },
      },
      handler: async (request) => {
        const skip = request.query.skip ?? 0;
        const limit = request.query.limit ?? DEFAULT_PAGE_LIMIT;
        // Usage grows with every query, so even the plain array is one page (the newest 100 by default).
        const paged = wantsPage(request.query);
        const { items, total } = await usage.page(requirePrincipal(request).tenant, request.params.slug, skip, limit, paged);
        return paged ? { items, total: total ?? items.length, skip, limit } : items;
      },
    });

    app.get('/endpoints/:slug/usage/summary', {
      config: { auth: 'tenant' },
      schema: {
        tags: ['query'],
        params: SlugParams,
        querystring: UsageSummaryQuery,
        response: { 200: UsageSummaryView },
      },
      handler: async (request) => {
        const { bucket, from, to, include_playground } = request.query;
        return usage.summary(requirePrincipal(request).tenant, request.params.slug, {
          bucket,
          from,
          to,
          includePlayground: include_playground,
        });
      },
    });
  };
}

/** Aborted as soon as the client goes away: generating an answer that would be thrown away stops. */
function abortedOnClose(reply: FastifyReply): AbortSignal {
  const abort = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) abort.abort(new Error('client disconnected'));
  });
  return abort.signal;
}
