import type { Static } from 'typebox';
import { type DatasetRecord, datasetConfigurationView } from '../datasets/codec.ts';
import type { DatasetRepository } from '../datasets/repository.ts';
import { conflictAs } from '../db/conflicts.ts';
import type { Window } from '../db/windows.ts';
import { NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { Publications } from '../domain/publications.ts';
import { Issues } from '../http/issues.ts';
import type { Listed } from '../http/pagination.ts';
import { type ModelRecord, modelConfigurationView } from '../models/codec.ts';
import type { ModelRepository } from '../models/repository.ts';
import type { PolicyRepository } from '../policies/repository.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import type { EndpointRecord } from './codec.ts';
import type { ArchivedFilter, EndpointRepository } from './repository.ts';
import type { CreatedEndpointView, CreateEndpointBody, EndpointDetail, EndpointListItem, UpdateEndpointBody } from './schemas.ts';

type Created = Static<typeof CreatedEndpointView>;
type ListItem = Static<typeof EndpointListItem>;
type Detail = Static<typeof EndpointDetail>;

export class EndpointService {
  constructor(
    private readonly endpoints: EndpointRepository,
    private readonly datasets: DatasetRepository,
    private readonly models: ModelRepository,
    private readonly policies: PolicyRepository,
    private readonly clock: Clock,
    private readonly publications?: Publications,
    /** How many endpoints a tenant may have (SVC_TENANT_QUOTAS; 0: no limit). */
    private readonly quota = 0,
  ) {}

  async create(tenant: Tenant, body: Static<typeof CreateEndpointBody>): Promise<Created> {
    const datasetId = body.dataset_id ?? null;
    const modelId = body.model_id ?? null;
    const responseType = body.response_type ?? 'both';
    checkLinks(datasetId, modelId, responseType);
    if (datasetId && !(await this.datasets.get(tenant.id, datasetId))) throw new NotFoundError(`Dataset '${datasetId}' not found`);
    if (modelId && !(await this.models.get(tenant.id, modelId))) throw new NotFoundError(`Model '${modelId}' not found`);
    const slug = body.slug.toLowerCase();
    const timestamp = isoNow(this.clock);
    const row: EndpointRecord = {
      id: crypto.randomUUID(),
      tenant_id: tenant.id,
      name: body.name,
      slug,
      description: body.description ?? '',
      summary: body.summary ?? '',
      dataset_id: datasetId,
      model_id: modelId,
      response_type: responseType,
      published: body.published ?? false,
      tags: normalizeTags(body.tags ?? ''),
      generation_defaults: body.generation_defaults ?? {},
      created_at: timestamp,
      updated_at: timestamp,
      archived_at: null,
    };
    await conflictAs(`Endpoint with slug '${slug}' already exists`, () => this.endpoints.insert(row, this.quota));
    return {
      ...baseView(row),
      description: row.description,
      model_id: modelId,
      dataset_id: datasetId,
      published_to: [],
      updated_at: row.updated_at,
    };
  }

  /** The tenant's endpoints (not archived, unless asked), or the window of them asked for, and how many there are. */
  async list(tenant: Tenant, window?: Window, archived: ArchivedFilter = 'false'): Promise<Listed<ListItem>> {
    const [rows, datasets, models] = await Promise.all([
      this.endpoints.list(tenant.id, window, archived),
      this.datasets.list(tenant.id),
      this.models.list(tenant.id),
    ]);
    const datasetById = new Map(datasets.map((row) => [row.id, row]));
    const modelById = new Map(models.map((row) => [row.id, row]));
    const publishedTo = await this.endpoints.publishedTo(rows.map((row) => row.id));
    const items = rows.map((row) => ({
      ...baseView(row),
      published_to: publishedTo.get(row.id) ?? [],
      model: embeddedModel(row.model_id ? modelById.get(row.model_id) : undefined),
      dataset: embeddedDataset(row.dataset_id ? datasetById.get(row.dataset_id) : undefined),
    }));
    return { items, total: window ? await this.endpoints.count(tenant.id, archived) : rows.length };
  }

  async get(tenant: Tenant, slug: string): Promise<Detail> {
    const row = await this.require(tenant, slug);
    const [dataset, model, policies, publishedTo, remembered] = await Promise.all([
      row.dataset_id ? this.datasets.get(tenant.id, row.dataset_id) : undefined,
      row.model_id ? this.models.get(tenant.id, row.model_id) : undefined,
      this.policies.list(tenant.id, row.id),
      this.endpoints.publishedTo([row.id]),
      row.archived_at ? this.endpoints.remembered(tenant.id, row.id) : [],
    ]);
    return {
      ...baseView(row),
      description: row.description,
      updated_at: row.updated_at,
      published_to: publishedTo.get(row.id) ?? [],
      archived_from: remembered.map((link) => link.marketplace_id),
      model: embeddedModel(model),
      dataset: embeddedDataset(dataset),
      policies: policies.map((policy) => ({
        id: policy.id,
        name: policy.name,
        policy_type: policy.policy_type,
        configuration: { ...policy.configuration },
      })),
    };
  }

  /**
   * Only name, summary and description can change (specification, Endpoint management rule 2), and the
   * generation defaults (API-CONTRACT 4), which the marketplace does not see.
   */
  async update(tenant: Tenant, slug: string, body: Static<typeof UpdateEndpointBody>): Promise<Detail> {
    const row = await this.require(tenant, slug);
    const described = body.name !== undefined || body.summary !== undefined || body.description !== undefined;
    if (!described && body.generation_defaults === undefined) {
      throw ValidationError.body([], 'At least one of name, summary, description, generation_defaults is required', 'missing');
    }
    await this.endpoints.update(tenant.id, row.id, {
      name: body.name,
      summary: body.summary,
      description: body.description,
      generation_defaults: body.generation_defaults,
      updated_at: isoNow(this.clock),
    });
    if (described) this.publications?.refresh(tenant, row.id);
    return this.get(tenant, slug);
  }

  /**
   * Archives the endpoint (API-CONTRACT 4, "Archive"): at once here (no query is answered from now on), then
   * off every marketplace it is published to, which it remembers for unarchiving; a marketplace that cannot be
   * told now is retried in the background. Its policies, usage and links stay. Archiving an archived endpoint
   * changes nothing but tries the marketplaces again.
   */
  async archive(tenant: Tenant, slug: string): Promise<Detail> {
    const row = await this.require(tenant, slug);
    if (!row.archived_at) {
      const timestamp = isoNow(this.clock);
      await this.endpoints.update(tenant.id, row.id, { archived_at: timestamp, updated_at: timestamp });
    }
    await this.publications?.settleArchive(tenant, row.id);
    return this.get(tenant, slug);
  }

  /** Takes the endpoint out of the archive: it answers again and is published again where it was (retried likewise). */
  async unarchive(tenant: Tenant, slug: string): Promise<Detail> {
    const row = await this.require(tenant, slug);
    if (row.archived_at) await this.endpoints.update(tenant.id, row.id, { archived_at: null, updated_at: isoNow(this.clock) });
    await this.publications?.settleArchive(tenant, row.id);
    return this.get(tenant, slug);
  }

  /**
   * Deletes the endpoint and its policies; the linked dataset and model stay. Then the endpoint is
   * removed from every marketplace it was linked to, archived or not (best effort: the deletion stands
   * regardless; a marketplace that had already taken an archived endpoint off answers that it is absent).
   */
  async delete(tenant: Tenant, slug: string): Promise<EndpointRecord> {
    const row = await this.require(tenant, slug);
    const publishedTo = (await this.endpoints.remembered(tenant.id, row.id)).map((link) => link.marketplace_id);
    await this.endpoints.delete(tenant.id, row.id);
    if (publishedTo.length > 0) await this.publications?.removeEverywhere(tenant, row.slug, publishedTo);
    return row;
  }

  private async require(tenant: Tenant, slug: string): Promise<EndpointRecord> {
    const row = await this.endpoints.getBySlug(tenant.id, slug.toLowerCase());
    if (!row) throw new NotFoundError(`Endpoint '${slug}' not found`);
    return row;
  }
}

/** An endpoint must link something, and its response type must have something to answer with. */
function checkLinks(datasetId: string | null, modelId: string | null, responseType: string): void {
  if (!datasetId && !modelId) {
    throw ValidationError.body([], 'At least one of dataset_id and model_id must be set', 'missing');
  }
  const issues = new Issues();
  if (responseType === 'raw' && !datasetId) issues.add('response_type', "'raw' searches a dataset: dataset_id is required", 'value_error');
  if (responseType === 'summary' && !modelId)
    issues.add('response_type', "'summary' generates with a model: model_id is required", 'value_error');
  issues.throwIfAny();
}

function normalizeTags(tags: string): string {
  return tags
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag !== '')
    .join(',');
}

function baseView(row: EndpointRecord) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    summary: row.summary,
    response_type: row.response_type,
    // An archived endpoint is on no marketplace; its flag is kept for when it is unarchived.
    published: row.published && !row.archived_at,
    tags: row.tags,
    generation_defaults: row.generation_defaults,
    archived: Boolean(row.archived_at),
    archived_at: row.archived_at ?? null,
    created_at: row.created_at,
  };
}

function embeddedModel(row: ModelRecord | undefined) {
  return row ? { id: row.id, name: row.name, dtype: row.dtype, configuration: modelConfigurationView(row.configuration) } : null;
}

function embeddedDataset(row: DatasetRecord | undefined) {
  return row
    ? { id: row.id, name: row.name, summary: row.summary, dtype: row.dtype, configuration: datasetConfigurationView(row.configuration) }
    : null;
}
