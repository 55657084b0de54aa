import type { Static } from 'typebox';
import type { Window } from '../db/windows.ts';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { Listed } from '../http/pagination.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import { keepMaskedSecrets } from '../security/secret-config.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { type ModelConfiguration, type ModelRecord, modelConfigurationView } from './codec.ts';
import { normalizeModelSettings } from './configuration.ts';
import type { ModelRepository } from './repository.ts';
import type { CreateModelBody, ModelView, UpdateModelBody } from './schemas.ts';

export type ModelViewData = Static<typeof ModelView>;

export class ModelService {
  constructor(
    private readonly models: ModelRepository,
    /** The folders a tenant's local model files must lie in: the folders it may index (tenants/ingestion-roots.ts). */
    private readonly roots: { of(tenantId: string): Promise<string[]> },
    private readonly clock: Clock,
    /** How many models a tenant may have (SVC_TENANT_QUOTAS; 0: no limit). */
    private readonly quota = 0,
    /** What the tenant's calls may reach: a base_url it may never call is refused when it is configured (outbound/). */
    private readonly outbound?: OutboundPolicy,
  ) {}

  async create(tenant: Tenant, body: Static<typeof CreateModelBody>): Promise<ModelViewData> {
    const timestamp = isoNow(this.clock);
    const record: ModelRecord = {
      id: crypto.randomUUID(),
      tenant_id: tenant.id,
      name: body.name,
      created_at: timestamp,
      updated_at: timestamp,
      ...normalizeModelSettings(body.dtype, body.configuration, await this.roots.of(tenant.id)),
    };
    await this.checkAddress(tenant, record.configuration);
    await this.models.insert(record, this.quota);
    return toModelView(record);
  }

  /** The tenant's models, or the window of them asked for, and how many there are. */
  async list(tenant: Tenant, window?: Window): Promise<Listed<ModelViewData>> {
    const rows = await this.models.list(tenant.id, window);
    return { items: rows.map(toModelView), total: window ? await this.models.count(tenant.id) : rows.length };
  }

  async get(tenant: Tenant, id: string): Promise<ModelViewData> {
    return toModelView(await this.require(tenant, id));
  }

  /** Changes the name and/or configuration; secrets sent back as `********` keep their stored values. */
  async update(tenant: Tenant, id: string, body: Static<typeof UpdateModelBody>): Promise<ModelViewData> {
    const record = await this.require(tenant, id);
    if (body.name === undefined && body.configuration === undefined) {
      throw ValidationError.body([], 'At least one of name, configuration is required', 'missing');
    }
    let configuration: ModelConfiguration | undefined;
    if (body.configuration !== undefined) {
      const merged = keepMaskedSecrets(body.configuration, record.configuration);
      configuration = normalizeModelSettings(record.dtype, merged, await this.roots.of(tenant.id)).configuration;
      await this.checkAddress(tenant, configuration);
    }
    await this.models.update(tenant.id, id, {
      updated_at: isoNow(this.clock),
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(configuration !== undefined ? { configuration } : {}),
    });
    return this.get(tenant, id);
  }

  async delete(tenant: Tenant, id: string): Promise<void> {
    const record = await this.require(tenant, id);
    const slugs = await this.models.linkedEndpointSlugs(tenant.id, id);
    if (slugs.length > 0) {
      throw new ConflictError(`Model '${record.name}' is used by endpoints: ${slugs.join(', ')}; delete them first`);
    }
    await this.models.delete(tenant.id, id);
  }

  /**
   * A base_url whose host knode will not call for this tenant (a metadata service, link-local, or loopback and
   * private addresses it may not reach) is a 422 on the field now, rather than a failure at every query. A
   * host name is resolved only when called (outbound/fetch.ts checks every address then).
   */
  private async checkAddress(tenant: Tenant, configuration: ModelConfiguration): Promise<void> {
    const baseUrl = (configuration as { base_url?: unknown }).base_url;
    if (!this.outbound || typeof baseUrl !== 'string') return;
    const refused = (await this.outbound.forTenant(tenant.id)).hostRefusal(new URL(baseUrl).hostname);
    if (refused) throw ValidationError.body(['configuration', 'base_url'], refused, 'url_refused');
  }

  /** The model with its configuration opened (secrets readable), for the call that needs it. */
  async openConfiguration(tenant: Tenant, id: string): Promise<ModelRecord> {
    return this.require(tenant, id);
  }

  private async require(tenant: Tenant, id: string): Promise<ModelRecord> {
    const record = await this.models.get(tenant.id, id);
    if (!record) throw new NotFoundError(`Model '${id}' not found`);
    return record;
  }
}

function toModelView(record: ModelRecord): ModelViewData {
  return {
    id: record.id,
    name: record.name,
    dtype: record.dtype,
    configuration: modelConfigurationView(record.configuration),
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}
