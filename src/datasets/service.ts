import type { Static } from 'typebox';
import { now } from '../db/database.ts';
import { conflictAs } from '../http/conflicts.ts';
import { ConflictError, NotFoundError, ValidationError } from '../http/errors.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type Configuration, maskSecrets, openSecrets, sealSecrets } from '../security/secret-config.ts';
import type { Tenant } from '../tenants/repository.ts';
import { type DatasetRules, normalizeDatasetConfiguration } from './configuration.ts';
import { type DatasetRepository, type DatasetRow, NO_FILES } from './repository.ts';
import type { CreateDatasetBody, DatasetView, UpdateDatasetBody } from './schemas.ts';

export type DatasetViewData = Static<typeof DatasetView>;

export class DatasetService {
  constructor(
    private readonly datasets: DatasetRepository,
    private readonly box: SecretBox,
    private readonly rules: DatasetRules,
  ) {}

  async create(tenant: Tenant, body: Static<typeof CreateDatasetBody>): Promise<DatasetViewData> {
    const configuration = normalizeDatasetConfiguration(body.configuration, body.name, this.rules);
    const timestamp = now();
    const row: DatasetRow = {
      id: crypto.randomUUID(),
      tenant_id: tenant.id,
      name: body.name,
      summary: body.summary ?? '',
      dtype: body.dtype,
      configuration: JSON.stringify(sealSecrets(configuration, this.box)),
      status: 'starting',
      created_at: timestamp,
      updated_at: timestamp,
    };
    await conflictAs(`Dataset named '${body.name}' already exists`, () => this.datasets.insert(row));
    return this.view(row);
  }

  async list(tenant: Tenant): Promise<DatasetViewData[]> {
    const rows = await this.datasets.list(tenant.id);
    const counts = await this.datasets.ingestionCounts(rows.map((row) => row.id));
    return rows.map((row) => toView(row, counts.get(row.id)));
  }

  async get(tenant: Tenant, id: string): Promise<DatasetViewData> {
    return this.view(await this.require(tenant, id));
  }

  async update(tenant: Tenant, id: string, body: Static<typeof UpdateDatasetBody>): Promise<DatasetViewData> {
    await this.require(tenant, id);
    if (body.name === undefined && body.summary === undefined) {
      throw ValidationError.body([], 'At least one of name, summary is required', 'missing');
    }
    await conflictAs(`Dataset named '${body.name}' already exists`, () =>
      this.datasets.update(tenant.id, id, { name: body.name, summary: body.summary, updated_at: now() }),
    );
    return this.get(tenant, id);
  }

  async delete(tenant: Tenant, id: string): Promise<void> {
    const row = await this.require(tenant, id);
    const slugs = await this.datasets.linkedEndpointSlugs(tenant.id, id);
    if (slugs.length > 0) {
      throw new ConflictError(`Dataset '${row.name}' is used by endpoints: ${slugs.join(', ')}; delete them first`);
    }
    await this.datasets.delete(tenant.id, id);
  }

  /** The configuration with its secrets readable, for the engines that use the dataset. */
  async openConfiguration(tenant: Tenant, id: string): Promise<Configuration> {
    return openSecrets(JSON.parse((await this.require(tenant, id)).configuration), this.box);
  }

  private async require(tenant: Tenant, id: string): Promise<DatasetRow> {
    const row = await this.datasets.get(tenant.id, id);
    if (!row) throw new NotFoundError(`Dataset '${id}' not found`);
    return row;
  }

  private async view(row: DatasetRow): Promise<DatasetViewData> {
    const counts = await this.datasets.ingestionCounts([row.id]);
    return toView(row, counts.get(row.id));
  }
}

function toView(row: DatasetRow, counts = NO_FILES): DatasetViewData {
  return {
    id: row.id,
    name: row.name,
    summary: row.summary,
    dtype: row.dtype,
    configuration: maskSecrets(JSON.parse(row.configuration)),
    status: row.status as DatasetViewData['status'],
    ingestion: counts,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
