import { countRows } from '../db/counts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { insertWithinQuota } from '../db/quotas.ts';
import { type Window, windowed } from '../db/windows.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { MODEL_COLUMNS, ModelCodec, type ModelConfiguration, type ModelRecord } from './codec.ts';

/** Model records: configurations go in sealed and come out opened, through the codec. */
export class ModelRepository {
  private readonly codec: ModelCodec;

  constructor(
    private readonly db: DbOrTransaction,
    box: SecretBox,
  ) {
    this.codec = new ModelCodec(box);
  }

  /** Inserts the record while its tenant holds fewer than `limit` models (0: no limit; db/quotas.ts). */
  async insert(record: ModelRecord, limit = 0): Promise<void> {
    await insertWithinQuota(this.db, { quota: 'models', limit, column: 'tenant_id', owner: record.tenant_id }, (db) =>
      db.insertInto('models').values(this.codec.toRow(record)).execute(),
    );
  }

  /** The tenant's models, oldest first; with a window, only those rows. */
  async list(tenantId: string, window?: Window): Promise<ModelRecord[]> {
    const query = this.selectModels().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('seq');
    return (await windowed(query, window).execute()).map((row) => this.codec.toRecord(row));
  }

  count(tenantId: string): Promise<number> {
    return countRows(this.db, 'models', { tenant_id: tenantId });
  }

  async get(tenantId: string, id: string): Promise<ModelRecord | undefined> {
    const row = await this.selectModels().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
    return row && this.codec.toRecord(row);
  }

  async update(
    tenantId: string,
    id: string,
    changes: { name?: string; configuration?: ModelConfiguration; updated_at: string },
  ): Promise<void> {
    const { configuration, ...columns } = changes;
    await this.db
      .updateTable('models')
      .set(configuration === undefined ? columns : { ...columns, configuration: this.codec.sealConfiguration(configuration) })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .execute();
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('models').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  async linkedEndpointSlugs(tenantId: string, id: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .select('slug')
      .where('tenant_id', '=', tenantId)
      .where('model_id', '=', id)
      .orderBy('slug')
      .execute();
    return rows.map((row) => row.slug);
  }

  private selectModels() {
    return this.db.selectFrom('models').select(MODEL_COLUMNS);
  }
}
