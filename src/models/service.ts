import type { Static } from 'typebox';
import { now } from '../db/database.ts';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type Configuration, keepMaskedSecrets, maskSecrets, openSecrets, sealSecrets } from '../security/secret-config.ts';
import { type ModelDtype, normalizeModelConfiguration } from './configuration.ts';
import type { ModelRepository, ModelRow } from './repository.ts';
import type { CreateModelBody, ModelView, UpdateModelBody } from './schemas.ts';

export type ModelViewData = Static<typeof ModelView>;

export class ModelService {
  constructor(
    private readonly models: ModelRepository,
    private readonly box: SecretBox,
  ) {}

  async create(tenant: Tenant, body: Static<typeof CreateModelBody>): Promise<ModelViewData> {
    const configuration = normalizeModelConfiguration(body.dtype, body.configuration);
    const timestamp = now();
    const row: ModelRow = {
      id: crypto.randomUUID(),
      tenant_id: tenant.id,
      name: body.name,
      dtype: body.dtype,
      configuration: JSON.stringify(sealSecrets(configuration, this.box)),
      created_at: timestamp,
      updated_at: timestamp,
    };
    await this.models.insert(row);
    return toModelView(row);
  }

  async list(tenant: Tenant): Promise<ModelViewData[]> {
    return (await this.models.list(tenant.id)).map(toModelView);
  }

  async get(tenant: Tenant, id: string): Promise<ModelViewData> {
    return toModelView(await this.require(tenant, id));
  }

  /** Changes the name and/or configuration; secrets sent back as `********` keep their stored values. */
  async update(tenant: Tenant, id: string, body: Static<typeof UpdateModelBody>): Promise<ModelViewData> {
    const row = await this.require(tenant, id);
    if (body.name === undefined && body.configuration === undefined) {
      throw ValidationError.body([], 'At least one of name, configuration is required', 'missing');
    }
    const changes: Partial<ModelRow> = { updated_at: now() };
    if (body.name !== undefined) changes.name = body.name;
    if (body.configuration !== undefined) {
      const stored = openSecrets(JSON.parse(row.configuration), this.box);
      const merged = keepMaskedSecrets(body.configuration, stored);
      const configuration = normalizeModelConfiguration(row.dtype as ModelDtype, merged);
      changes.configuration = JSON.stringify(sealSecrets(configuration, this.box));
    }
    await this.models.update(tenant.id, id, changes);
    return this.get(tenant, id);
  }

  async delete(tenant: Tenant, id: string): Promise<void> {
    const row = await this.require(tenant, id);
    const slugs = await this.models.linkedEndpointSlugs(tenant.id, id);
    if (slugs.length > 0) {
      throw new ConflictError(`Model '${row.name}' is used by endpoints: ${slugs.join(', ')}; delete them first`);
    }
    await this.models.delete(tenant.id, id);
  }

  /** The configuration with its secrets readable, decrypted only for the call that needs it. */
  async openConfiguration(tenant: Tenant, id: string): Promise<{ dtype: ModelDtype; configuration: Configuration }> {
    const row = await this.require(tenant, id);
    return { dtype: row.dtype as ModelDtype, configuration: openSecrets(JSON.parse(row.configuration), this.box) };
  }

  private async require(tenant: Tenant, id: string): Promise<ModelRow> {
    const row = await this.models.get(tenant.id, id);
    if (!row) throw new NotFoundError(`Model '${id}' not found`);
    return row;
  }
}

export function toModelView(row: ModelRow): ModelViewData {
  return {
    id: row.id,
    name: row.name,
    dtype: row.dtype,
    configuration: maskSecrets(JSON.parse(row.configuration)),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
