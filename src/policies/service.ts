import type { Static } from 'typebox';
import type { Window } from '../db/windows.ts';
import { type EndpointShape, generates, searches } from '../domain/endpoint-shape.ts';
import { NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { Publications } from '../domain/publications.ts';
import type { Listed } from '../http/pagination.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import type { PolicyConfiguration, PolicyRecord, PolicySettings } from './codec.ts';
import { normalizePolicySettings } from './configuration.ts';
import type { PolicyRepository } from './repository.ts';
import type { CreatePolicyBody, PolicyView, UpdatePolicyBody } from './schemas.ts';

export type PolicyViewData = Static<typeof PolicyView>;

export class PolicyService {
  constructor(
    private readonly policies: PolicyRepository,
    /** The endpoint a policy attaches to, in its tenant (the endpoints' repository). */
    private readonly endpoints: { getById(tenantId: string, id: string): Promise<EndpointShape | undefined> },
    private readonly clock: Clock,
    /** Published endpoints carry their policies to the marketplace: a change is sent there too. */
    private readonly publications?: Pick<Publications, 'refresh'>,
    /** How many policies an endpoint may have (SVC_TENANT_QUOTAS; 0: no limit). */
    private readonly quota = 0,
  ) {}

  async create(tenant: Tenant, body: Static<typeof CreatePolicyBody>): Promise<PolicyViewData> {
    const endpoint = await this.endpoints.getById(tenant.id, body.endpoint_id);
    if (!endpoint) throw new NotFoundError(`Endpoint '${body.endpoint_id}' not found`);
    const settings = normalizePolicySettings(body.policy_type, body.configuration);
    checkFitsEndpoint(settings, endpoint);
    const timestamp = isoNow(this.clock);
    const record: PolicyRecord = {
      id: crypto.randomUUID(),
      tenant_id: tenant.id,
      endpoint_id: body.endpoint_id,
      name: body.name,
      created_at: timestamp,
      updated_at: timestamp,
      ...settings,
    };
    await this.policies.insert(record, this.quota);
    this.publications?.refresh(tenant, record.endpoint_id);
    return toPolicyView(record);
  }

  /** The tenant's policies (of one endpoint), or the window of them asked for, and how many there are. */
  async list(tenant: Tenant, endpointId?: string, window?: Window): Promise<Listed<PolicyViewData>> {
    const rows = await this.policies.list(tenant.id, endpointId, window);
    return { items: rows.map(toPolicyView), total: window ? await this.policies.count(tenant.id, endpointId) : rows.length };
  }

  async get(tenant: Tenant, id: string): Promise<PolicyViewData> {
    return toPolicyView(await this.require(tenant, id));
  }

  /** Renames and/or replaces the configuration (validated for the policy's type); effective for the next query. */
  async update(tenant: Tenant, id: string, body: Static<typeof UpdatePolicyBody>): Promise<PolicyViewData> {
    const row = await this.require(tenant, id);
    if (body.name === undefined && body.configuration === undefined) {
      throw ValidationError.body([], 'At least one of name, configuration is required', 'missing');
    }
    let configuration: PolicyConfiguration | undefined;
    if (body.configuration !== undefined) {
      const settings = normalizePolicySettings(row.policy_type, body.configuration);
      const endpoint = await this.endpoints.getById(tenant.id, row.endpoint_id);
      if (endpoint) checkFitsEndpoint(settings, endpoint);
      configuration = settings.configuration;
    }
    await this.policies.update(tenant.id, id, {
      updated_at: isoNow(this.clock),
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(configuration !== undefined ? { configuration } : {}),
    });
    this.publications?.refresh(tenant, row.endpoint_id);
    return this.get(tenant, id);
  }

  async delete(tenant: Tenant, id: string): Promise<void> {
    const row = await this.require(tenant, id);
    await this.policies.delete(tenant.id, id);
    this.publications?.refresh(tenant, row.endpoint_id);
  }

  private async require(tenant: Tenant, id: string): Promise<PolicyRecord> {
    const row = await this.policies.get(tenant.id, id);
    if (!row) throw new NotFoundError(`Policy '${id}' not found`);
    return row;
  }
}

/**
 * A price per document needs documents: on an endpoint that never searches (no dataset, or a summary-only
 * answer) it would never charge anything, so it is refused rather than left to make the endpoint free.
 * A PII filter needs a generated answer: on an endpoint that only searches it would filter nothing while its
 * owner believed answers were filtered (the passages themselves are never filtered: API-CONTRACT 10.4).
 */
function checkFitsEndpoint(settings: PolicySettings, endpoint: EndpointShape): void {
  if (settings.policy_type === 'mpp' && settings.configuration.unit_type === 'document' && !searches(endpoint)) {
    throw ValidationError.body(
      ['configuration', 'unit_type'],
      "A price per document needs an endpoint that searches a dataset (response type 'raw' or 'both'): use 'request'",
      'value_error',
    );
  }
  if (settings.policy_type === 'pii_filter' && !generates(endpoint)) {
    throw ValidationError.body(
      ['policy_type'],
      "A PII filter needs an endpoint that answers with a model (response type 'summary' or 'both'): " +
        'the passages of a search are sent as they are',
      'value_error',
    );
  }
}

function toPolicyView(row: PolicyRecord): PolicyViewData {
  return {
    id: row.id,
    name: row.name,
    policy_type: row.policy_type,
    configuration: { ...row.configuration },
    endpoint_id: row.endpoint_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
