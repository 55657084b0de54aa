import { NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import type { Clock } from '../util/clock.ts';
import type { UsageRecord, UsageRepository } from './usage-repository.ts';
import { type Bucket, bucketCount, MAX_BUCKETS, summarise, type UsageSummary } from './usage-summary.ts';

export interface SummaryRequest {
  bucket?: Bucket;
  from?: string;
  to?: string;
  includePlayground?: boolean;
}

/** The range shown when none is asked: the last day by hours, the last 30 days by days. */
const DEFAULT_SPAN_MS: Record<Bucket, number> = { hour: 86_400_000, day: 30 * 86_400_000 };

/** The recorded queries of an endpoint (GET /endpoints/{slug}/usage). */
export class UsageService {
  constructor(
    private readonly endpoints: Pick<EndpointRepository, 'getBySlug'>,
    private readonly usage: UsageRepository,
    private readonly clock: Clock,
  ) {}

  /** Newest first; `total` only when asked (it costs a count). Another tenant's endpoint is a 404. */
  async page(
    tenant: Tenant,
    slug: string,
    skip: number,
    limit: number,
    withTotal: boolean,
  ): Promise<{ items: UsageRecord[]; total?: number }> {
    const endpoint = await this.endpoints.getBySlug(tenant.id, slug.toLowerCase());
    if (!endpoint) throw new NotFoundError(`Endpoint '${slug}' not found`);
    const items = await this.usage.list(tenant.id, endpoint.id, skip, limit);
    return withTotal ? { items, total: await this.usage.count(tenant.id, endpoint.id) } : { items };
  }

  /** GET /endpoints/{slug}/usage/summary: [from, to) counted per bucket (`to` defaults to now). */
  async summary(tenant: Tenant, slug: string, request: SummaryRequest): Promise<UsageSummary> {
    const endpoint = await this.endpoints.getBySlug(tenant.id, slug.toLowerCase());
    if (!endpoint) throw new NotFoundError(`Endpoint '${slug}' not found`);
    const bucket = request.bucket ?? 'hour';
    const to = request.to ? new Date(request.to) : new Date(this.clock.now());
    const from = request.from ? new Date(request.from) : new Date(to.getTime() - DEFAULT_SPAN_MS[bucket]);
    if (from.getTime() >= to.getTime()) {
      throw new ValidationError([{ loc: ['query', 'from'], msg: 'must be before `to`', type: 'value_error' }]);
    }
    if (bucketCount(from, to, bucket) > MAX_BUCKETS) {
      throw new ValidationError([
        {
          loc: ['query', 'from'],
          msg: `the range holds more than ${MAX_BUCKETS} ${bucket}s: narrow it or count by day`,
          type: 'value_error',
        },
      ]);
    }
    const rows = await this.usage.rowsBetween(
      tenant.id,
      endpoint.id,
      from.toISOString(),
      to.toISOString(),
      request.includePlayground ?? true,
    );
    return summarise(rows, { bucket, from, to });
  }
}
