import { generates, searches } from '../domain/endpoint-shape.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../domain/errors.ts';
import type { Principal, Tenant } from '../domain/principal.ts';
import type { EndpointRecord } from '../endpoints/codec.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import { estimateTokens } from '../llm/costs.ts';
import type { ChatMessage } from '../llm/provider.ts';
import type { HookSet, PolicyHooks } from '../policies/hook-set.ts';
import type { PolicyRepository } from '../policies/repository.ts';
import type { Clock } from '../util/clock.ts';
import { contextCeiling, queryBudget } from './answer-context.ts';
import { type Generation, generationFor } from './generation.ts';
import { PROMPT_TOKEN_MARGIN, searchText, toMessages } from './messages.ts';
import { QueryRecord, type QueryRecordDeps } from './query-record.ts';
import { type QueryContext, RunningQuery, type RunningQueryDeps } from './running-query.ts';
import type { QueryRequest } from './schemas.ts';

/** Who asks: the endpoint's owner (local JWT or admin key) or a marketplace user (satellite token). */
export interface QueryCaller {
  kind: 'owner' | 'satellite';
  senderEmail: string;
  tenant: Tenant;
  clientIp: string;
  /** `playground`: the owner asks from the console. */
  origin: 'api' | 'playground';
}

/**
 * The caller of a query, from its verified credentials. Only the owner's own questions may be marked as
 * the playground's (`X-Knode-Origin`): a consumer could otherwise hide from the analytics.
 */
export function queryCaller(principal: Principal, clientIp: string, originHeader: string | string[] | undefined): QueryCaller {
  const satellite = principal.kind === 'satellite';
  return {
    kind: satellite ? 'satellite' : 'owner',
    senderEmail: principal.email,
    tenant: principal.tenant,
    clientIp,
    origin: !satellite && originHeader === 'playground' ? 'playground' : 'api',
  };
}

export interface QueryPipelineDeps extends RunningQueryDeps, QueryRecordDeps {
  endpoints: EndpointRepository;
  policies: PolicyRepository;
  /** The run-time hooks of an endpoint's policies (policies/hook-set.ts). */
  hooks: PolicyHooks;
}

/**
 * The query pipeline of the specification (Endpoint management rule 7): (a) the caller's credentials
 * were verified by the route; `begin` finds the endpoint and runs the pre-hooks (b); the returned query
 * (running-query.ts) then searches (c), generates (d), runs the post-hooks (e) and answers (f), whole or
 * as a stream, and leaves its record (query-record.ts).
 */
export class QueryPipeline {
  constructor(private readonly deps: QueryPipelineDeps) {}

  /** The time its queries are recorded at; a streamed answer's chunks say it too (stream.ts). */
  get clock(): Clock {
    return this.deps.clock;
  }

  /** `payment` is the `X-Payment` header: an MPP credential for an endpoint with an `mpp` policy. */
  async begin(caller: QueryCaller, slug: string, body: QueryRequest, payment?: string): Promise<RunningQuery> {
    const arrived = performance.now();
    const endpoint = await this.deps.endpoints.getBySlug(caller.tenant.id, slug.toLowerCase());
    if (!endpoint) throw new NotFoundError(`Endpoint '${slug}' not found`);
    if (caller.kind === 'satellite' && (!endpoint.published || endpoint.archived_at)) throw new ForbiddenError('Endpoint is not published');
    // The owner is told why (API-CONTRACT 4, "Archive"): unarchiving makes it answer again.
    if (endpoint.archived_at) throw new ConflictError('Endpoint is archived');

    const policies = await this.deps.policies.list(caller.tenant.id, endpoint.id);
    const hooks = await this.deps.hooks.forQuery(caller.tenant, endpoint.id, policies, caller.senderEmail || caller.clientIp);

    const messages = toMessages(body.messages);
    const generation = generationFor(body, endpoint.generation_defaults);
    const context: QueryContext = {
      tenant: caller.tenant,
      endpoint,
      senderEmail: caller.senderEmail,
      transactionToken: body.transaction_token,
      body,
      generation,
      maxCost: await this.maxCost(caller.tenant, endpoint, messages, body.limit, generation, hooks),
      paymentCredential: payment,
      documentsAsked: body.limit,
    };
    const record = new QueryRecord(this.deps, {
      tenant: caller.tenant,
      endpoint,
      senderEmail: caller.senderEmail,
      origin: caller.origin,
      arrived,
      question: searchText(messages),
    });
    const query = new RunningQuery(this.deps, context, messages, hooks, record, caller.kind === 'satellite');
    await query.runPreHooks();
    return query;
  }

  /** The most the query can cost (what an accounting policy reserves): the search's price and the model's for the longest answer. */
  private async maxCost(
    tenant: Tenant,
    endpoint: EndpointRecord,
    messages: ChatMessage[],
    limit: number,
    generation: Generation,
    hooks: HookSet,
  ): Promise<number> {
    let cost = 0;
    let chunkSize: number | undefined;
    if (searches(endpoint) && endpoint.dataset_id) {
      const pricing = await this.deps.search.pricing(tenant, endpoint.dataset_id);
      cost += pricing.costPerQuery;
      chunkSize = pricing.chunkSize;
    }
    if (generates(endpoint) && endpoint.model_id) {
      let referenceCharacters = 0;
      if (chunkSize !== undefined) {
        // The passages whole, or the budget their neighbouring chunks fill, whichever is larger (answer-context.ts).
        const budget = await queryBudget(this.deps.models, { tenant, modelId: endpoint.model_id, messages, generation });
        referenceCharacters = contextCeiling(limit, chunkSize, budget);
      }
      const promptCharacters = messages.reduce((sum, message) => sum + message.content.length, 0) + (generation.system_prompt?.length ?? 0);
      const promptTokens = estimateTokens(promptCharacters + referenceCharacters) + PROMPT_TOKEN_MARGIN;
      cost += await this.deps.models.maxCost(tenant, endpoint.model_id, promptTokens, generation.max_tokens);
      // A policy that rewrites the answer (a PII filter) asks the model again, with the answer in its prompt.
      for (const call of hooks.modelCalls(generation.max_tokens)) {
        const callPrompt = estimateTokens(call.instructionCharacters) + call.answerTokens + PROMPT_TOKEN_MARGIN;
        cost += await this.deps.models.maxCost(tenant, endpoint.model_id, callPrompt, call.maxTokens);
      }
    }
    return cost;
  }
}
