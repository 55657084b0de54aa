import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '../domain/errors.ts';
import { SlugParams } from '../endpoints/schemas.ts';
import { clientIp } from '../http/client.ts';
import { DEFAULT_PAGE_LIMIT, listOf, PageQuery, wantsPage } from '../http/pagination.ts';
import { requirePrincipal } from '../http/principal.ts';
import type { AnswerEvent, QueryPipeline } from './pipeline.ts';
import { QueryBody, QueryHeaders, QueryResponse, UsageRecordView, UsageSummaryQuery, UsageSummaryView } from './schemas.ts';
import { SseWriter } from './stream.ts';
import type { UsageService } from './usage-service.ts';

export function queryRoutes(pipeline: QueryPipeline, usage: UsageService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/endpoints/:slug/query', {
      // Public queries are counted per caller by the pipeline, not per tenant by the general hook.
      config: { auth: 'query', counted: false },
      schema: { tags: ['query'], params: SlugParams, headers: QueryHeaders, body: QueryBody, response: { 200: QueryResponse } },
      handler: async (request, reply) => {
        const principal = requirePrincipal(request);
        const caller = {
          kind: principal.kind === 'satellite' ? ('satellite' as const) : ('owner' as const),
          senderEmail: principal.email,
          tenant: principal.tenant,
          clientIp: clientIp(request),
          // Only the owner's own questions may be marked: a consumer could otherwise hide from the analytics.
          origin:
            principal.kind !== 'satellite' && request.headers['x-knode-origin'] === 'playground'
              ? ('playground' as const)
              : ('api' as const),
        };
        // Stop generating as soon as the client goes away (the answer would be thrown away).
        const abort = new AbortController();
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) abort.abort(new Error('client disconnected'));
        });
        const query = await pipeline.begin(caller, request.params.slug, request.body, request.headers['x-payment']);
        if (!request.body.stream) return query.answer(abort.signal);

        if (query.holdsAnswer) {
          // A paid stream is made whole, and its payment collected, before its first byte: until then it can
          // still end as a plain 402 or 502, and the caller is never charged for an answer it did not get.
          const events: AnswerEvent[] = [];
          for await (const event of query.stream(abort.signal)) events.push(event);
          const sse = new SseWriter(reply);
          sse.open();
          for (const event of events) sse.write(event);
          sse.end();
          return reply;
        }

        const sse = new SseWriter(reply);
        const events = query.stream(abort.signal);
        // Errors before the first event (e.g. the search failed) are still ordinary HTTP errors.
        const first = await events.next();
        sse.open();
        try {
          if (!first.done) sse.write(first.value);
          for await (const event of events) sse.write(event);
        } catch (error) {
          if (!abort.signal.aborted) {
            request.log.error({ err: error }, 'query stream failed');
            sse.error(error instanceof DomainError ? error.detail : 'Internal server error');
          }
        }
        sse.end();
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
