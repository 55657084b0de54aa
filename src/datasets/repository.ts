import { sql, type Transaction } from 'kysely';
import { countRows } from '../db/counts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { insertWithinQuota } from '../db/quotas.ts';
import type { Database } from '../db/schema.ts';
import { type Window, windowed } from '../db/windows.ts';
import type { SelectedEntry } from '../ingestion/selection-entries.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import type { FencingLease } from '../vectors/store.ts';
import { DATASET_COLUMNS, DatasetCodec, type DatasetRecord, type DatasetStatus } from './codec.ts';
import { insertEntries, selectionOf } from './selection-repository.ts';

/**
 * A file is `searchable` (its chunks are in the keyword index) before it is `indexed` (their vectors
 * too): `files_searchable` counts both, `files_pending` counts every file with work left, embedding
 * included; `chunks` are the searchable chunks and `chunks_embedded` those of them with their vector.
 */
export interface IngestionCounts {
  files_total: number;
  files_searchable: number;
  files_indexed: number;
  files_pending: number;
  files_failed: number;
  chunks: number;
  chunks_embedded: number;
}

export const NO_FILES: IngestionCounts = {
  files_total: 0,
  files_searchable: 0,
  files_indexed: 0,
  files_pending: 0,
  files_failed: 0,
  chunks: 0,
  chunks_embedded: 0,
};

/** Dataset records: configurations go in sealed and come out opened, through the codec. */
export class DatasetRepository {
  private readonly codec: DatasetCodec;

  constructor(
    private readonly db: DbOrTransaction,
    box: SecretBox,
    private readonly clock: Clock = systemClock,
  ) {
    this.codec = new DatasetCodec(box);
  }

  /**
   * Inserts the record while its tenant holds fewer than `limit` datasets (0: no limit; db/quotas.ts); a
   * `local_file` dataset's folder becomes the first entry of its selection (prefix '', selection-entries.ts).
   */
  async insert(record: DatasetRecord, limit = 0): Promise<void> {
    await insertWithinQuota(this.db, { quota: 'datasets', limit, column: 'tenant_id', owner: record.tenant_id }, async (db) => {
      await db.insertInto('datasets').values(this.codec.toRow(record)).execute();
      if (record.dtype !== 'local_file') return;
      const entry = { path: record.configuration.ingestionPath, kind: 'folder', prefix: '', addedAt: record.created_at } as const;
      await insertEntries(db, record.id, [entry]);
    });
  }

  /** A `local_file` dataset's selection, oldest first (ingestion/ports.ts; the caller has the dataset's id). */
  selection(id: string): Promise<SelectedEntry[]> {
    return selectionOf(this.db, id);
  }

  /**
   * `configuration.ingestionPath` follows the selection: the oldest entry's path, or '' once none is left
   * (API-CONTRACT 4, "Selections"), so clients that know only that key still see where the dataset reads.
   */
  async setIngestionPath(tenantId: string, id: string, ingestionPath: string): Promise<void> {
    const record = await this.get(tenantId, id);
    if (!record || record.configuration.ingestionPath === ingestionPath) return;
    const configuration = this.codec.sealConfiguration({ ...record.configuration, ingestionPath });
    await this.db.updateTable('datasets').set({ configuration }).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** The tenant's datasets, oldest first; with a window, only those rows. */
  async list(tenantId: string, window?: Window): Promise<DatasetRecord[]> {
    const query = this.selectDatasets().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('seq');
    return (await windowed(query, window).execute()).map((row) => this.codec.toRecord(row));
  }

  count(tenantId: string): Promise<number> {
    return countRows(this.db, 'datasets', { tenant_id: tenantId });
  }

  async get(tenantId: string, id: string): Promise<DatasetRecord | undefined> {
    const row = await this.selectDatasets().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
    return row && this.codec.toRecord(row);
  }

  async update(tenantId: string, id: string, changes: Partial<Pick<DatasetRecord, 'name' | 'summary' | 'updated_at'>>): Promise<void> {
    await this.db.updateTable('datasets').set(changes).where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** Datasets of every tenant that should be ingesting (at start-up, to resume them). */
  async listActive(): Promise<DatasetRecord[]> {
    const rows = await this.selectDatasets().where('status', 'in', ['starting', 'running', 'error']).execute();
    return rows.map((row) => this.codec.toRecord(row));
  }

  /** Internal lookups by id alone, for the ingestion engine (never reachable from a request). */
  async getAnyTenant(id: string): Promise<DatasetRecord | undefined> {
    const row = await this.selectDatasets().where('id', '=', id).executeTakeFirst();
    return row && this.codec.toRecord(row);
  }

  /**
   * `error` says why a dataset is in status `error`; any other status clears it. The ingestion runtime's
   * writes are fenced with the dataset's `lease` (vectors/store.ts, FencingLease): refused once it is lost.
   */
  async setStatus(id: string, status: DatasetStatus, error: string | null = null, lease?: FencingLease): Promise<void> {
    const write = (db: DbOrTransaction) =>
      db
        .updateTable('datasets')
        .set({ status, error, updated_at: isoNow(this.clock) })
        .where('id', '=', id)
        .execute();
    if (!lease) return void (await write(this.db));
    const fenced = async (trx: Transaction<Database>) => {
      await lease.fence(trx);
      await write(trx);
    };
    if (this.db.isTransaction) return fenced(this.db as Transaction<Database>);
    await this.db.transaction().execute(fenced);
  }

  async delete(tenantId: string, id: string): Promise<void> {
    await this.db.deleteFrom('datasets').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
  }

  /** Slugs of the endpoints that link the dataset: while there are any it cannot be deleted. */
  async linkedEndpointSlugs(tenantId: string, id: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('endpoints')
      .select('slug')
      .where('tenant_id', '=', tenantId)
      .where('dataset_id', '=', id)
      .orderBy('slug')
      .execute();
    return rows.map((row) => row.slug);
  }

  /**
   * The modification time (ms since the epoch) of each of `paths` in the dataset, as its folder's scan saw the
   * version indexed; a path with none recorded is absent. What dates a file's passages in an answer's context.
   */
  async modifiedTimes(datasetId: string, paths: readonly string[]): Promise<Map<string, number>> {
    if (paths.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('dataset_files')
      .select(['path', 'mtime_ms'])
      .where('dataset_id', '=', datasetId)
      .where('path', 'in', [...new Set(paths)])
      .where('mtime_ms', '>', 0)
      .execute();
    return new Map(rows.map((row) => [row.path, Number(row.mtime_ms)]));
  }

  /** The `ingestion` counters of each dataset, from its files' states (API-CONTRACT 4). */
  async ingestionCounts(datasetIds: string[]): Promise<Map<string, IngestionCounts>> {
    const counts = new Map<string, IngestionCounts>();
    if (datasetIds.length === 0) return counts;
    const rows = await this.db
      .selectFrom('dataset_files')
      .select([
        'dataset_id',
        sql<number>`sum(CASE WHEN status <> 'removed' THEN 1 ELSE 0 END)`.as('files_total'),
        sql<number>`sum(CASE WHEN status IN ('searchable', 'indexed') THEN 1 ELSE 0 END)`.as('files_searchable'),
        sql<number>`sum(CASE WHEN status = 'indexed' THEN 1 ELSE 0 END)`.as('files_indexed'),
        sql<number>`sum(CASE WHEN status IN ('queued', 'indexing', 'searchable') THEN 1 ELSE 0 END)`.as('files_pending'),
        sql<number>`sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END)`.as('files_failed'),
        sql<number>`sum(CASE WHEN status IN ('searchable', 'indexed') THEN chunks ELSE 0 END)`.as('chunks'),
        sql<number>`sum(CASE WHEN status IN ('searchable', 'indexed') THEN chunks_embedded ELSE 0 END)`.as('chunks_embedded'),
      ])
      .where('dataset_id', 'in', datasetIds)
      .groupBy('dataset_id')
      .execute();
    for (const row of rows) {
      counts.set(row.dataset_id, {
        files_total: Number(row.files_total),
        files_searchable: Number(row.files_searchable),
        files_indexed: Number(row.files_indexed),
        files_pending: Number(row.files_pending),
        files_failed: Number(row.files_failed),
        chunks: Number(row.chunks),
        chunks_embedded: Number(row.chunks_embedded),
      });
    }
    return counts;
  }

  private selectDatasets() {
    return this.db.selectFrom('datasets').select(DATASET_COLUMNS);
  }
}
