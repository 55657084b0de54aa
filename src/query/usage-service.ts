import { NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { EndpointRepository } from '../endpoints/repository.ts';
import type { UsageRecord, UsageRepository } from './usage-repository.ts';

/** The recorded queries of an endpoint (GET /endpoints/{slug}/usage). */
export class UsageService {
  constructor(
    private readonly endpoints: Pick<EndpointRepository, 'getBySlug'>,
    private readonly usage: UsageRepository,
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
}
