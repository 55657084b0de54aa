import type { Static } from 'typebox';
import { conflictAs } from '../db/conflicts.ts';
import type { Window } from '../db/windows.ts';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import { USE_LITE_DIMENSION } from '../embeddings/use-lite.ts';
import type { Listed } from '../http/pagination.ts';
import type { IngestionEngine } from '../ingestion/engine.ts';
import type { FileRepository } from '../ingestion/files-repository.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import type { IngestionRoots } from '../tenants/ingestion-roots.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { calibrationFor } from '../vectors/calibration.ts';
import { RANKING } from '../vectors/ranking.ts';
import type { FittedCalibration } from '../vectors/self-calibration.ts';
import type { SearchEngine } from '../vectors/store.ts';
import { type DatasetConfiguration, type DatasetRecord, datasetConfigurationView } from './codec.ts';
import { type DatasetRules, normalizeDatasetConfiguration } from './configuration.ts';
import type { FeedStateView as FeedStateViewSchema } from './feed-schemas.ts';
import { type DatasetRepository, NO_FILES } from './repository.ts';
import type { CreateDatasetBody, DatasetFileView, DatasetView, ProvisionerView, UpdateDatasetBody } from './schemas.ts';

export type DatasetViewData = Static<typeof DatasetView>;

export type FileViewData = Static<typeof DatasetFileView>;

export type FeedStateView = Static<typeof FeedStateViewSchema>;

/** The state of an `rss` dataset's feeds (feeds/ implements it). */
export interface FeedStates {
  states(datasetId: string): Promise<FeedStateView[]>;
}

export class DatasetService {
  constructor(
    private readonly datasets: DatasetRepository,
    /**
     * `quota`: how many datasets a tenant may have (SVC_TENANT_QUOTAS; 0: no limit); `searchEngine`: what the
     * store is built on (its provisioners' details, and the dataset view says when vectors cannot be searched).
     */
    private readonly rules: { defaultEmbedder: string; quota?: number; searchEngine?: SearchEngine },
    private readonly roots: IngestionRoots,
    private readonly ingestion: Pick<IngestionEngine, 'start' | 'stop' | 'remove' | 'reindex'>,
    private readonly files: FileRepository,
    private readonly clock: Clock,
    /** What the tenant's calls may reach: an embedder's base_url it may never call is refused when configured (outbound/). */
    private readonly outbound?: OutboundPolicy,
    /** The datasets' own calibrations (vectors/store.ts), shown in their view. */
    private readonly calibrations?: { fittedCalibrations(ids: readonly string[]): Promise<Map<string, FittedCalibration>> },
    /** How each feed of an `rss` dataset is doing (feeds/feed-repository.ts). */
    private readonly feedStates?: FeedStates,
  ) {}

  async create(tenant: Tenant, body: Static<typeof CreateDatasetBody>): Promise<DatasetViewData> {
    const rules: DatasetRules = { ingestionRoots: await this.roots.of(tenant.id), defaultEmbedder: this.rules.defaultEmbedder };
    const timestamp = isoNow(this.clock);
    const record: DatasetRecord = {
      id: crypto.randomUUID(),
      tenant_id: tenant.id,
      name: body.name,
      summary: body.summary ?? '',
      dtype: body.dtype,
      configuration: normalizeDatasetConfiguration(body.dtype, body.configuration, body.name, rules),
      status: 'starting',
      error: null,
      created_at: timestamp,
      updated_at: timestamp,
    };
    await this.checkAddress(tenant, record.configuration.base_url);
    const feeds = Array.isArray(record.configuration.feeds) ? (record.configuration.feeds as string[]) : [];
    for (const [index, feed] of feeds.entries()) await this.checkAddress(tenant, feed, ['configuration', 'feeds', index]);
    await conflictAs(`Dataset named '${body.name}' already exists`, () => this.datasets.insert(record, this.rules.quota));
    // A new dataset starts at once; its first scan runs in the background (status tells how far it got).
    void this.ingestion.start(record.id);
    return this.view(record);
  }

  /**
   * An `openai:` embedder's base_url whose host knode will not call for this tenant (a metadata service,
   * link-local, loopback or private where not allowed) is a 422 on the field now, not a failed dataset later.
   */
  private async checkAddress(
    tenant: Tenant,
    baseUrl: string | null | undefined,
    loc: (string | number)[] = ['configuration', 'base_url'],
  ): Promise<void> {
    if (!this.outbound || typeof baseUrl !== 'string' || baseUrl === '') return;
    const refused = (await this.outbound.forTenant(tenant.id)).hostRefusal(new URL(baseUrl).hostname);
    if (refused) throw ValidationError.body(loc, refused, 'url_refused');
  }

  /** The tenant's datasets, or the window of them asked for, and how many there are. */
  async list(tenant: Tenant, window?: Window): Promise<Listed<DatasetViewData>> {
    const rows = await this.datasets.list(tenant.id, window);
    const counts = await this.datasets.ingestionCounts(rows.map((row) => row.id));
    const fits = await this.fits(rows.map((row) => row.id));
    const total = window ? await this.datasets.count(tenant.id) : rows.length;
    return { items: rows.map((row) => toView(row, counts.get(row.id), fits.get(row.id), this.rules.searchEngine?.vectorsMissing)), total };
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
      this.datasets.update(tenant.id, id, { name: body.name, summary: body.summary, updated_at: isoNow(this.clock) }),
    );
    return this.get(tenant, id);
  }

  async delete(tenant: Tenant, id: string): Promise<void> {
    const row = await this.require(tenant, id);
    const slugs = await this.datasets.linkedEndpointSlugs(tenant.id, id);
    if (slugs.length > 0) {
      throw new ConflictError(`Dataset '${row.name}' is used by endpoints: ${slugs.join(', ')}; delete them first`);
    }
    await this.ingestion.remove(id);
    await this.datasets.delete(tenant.id, id);
  }

  /** Pauses ingestion; the index stays searchable. */
  async stop(tenant: Tenant, id: string): Promise<DatasetViewData> {
    await this.require(tenant, id);
    await this.ingestion.stop(id);
    return this.get(tenant, id);
  }

  /** Resumes ingestion; the folder is reconciled with the index first. */
  async start(tenant: Tenant, id: string): Promise<DatasetViewData> {
    await this.require(tenant, id);
    await this.ingestion.start(id);
    return this.get(tenant, id);
  }

  async reindex(tenant: Tenant, id: string): Promise<void> {
    const row = await this.require(tenant, id);
    if (row.status === 'stopped') throw new ConflictError(`Dataset '${row.name}' is stopped: start it to reindex`);
    await this.ingestion.reindex(id);
  }

  /** The dataset types this server can provision, and how the local_file one is doing for this tenant. */
  async provisioners(tenant: Tenant): Promise<Static<typeof ProvisionerView>[]> {
    const rows = await this.datasets.list(tenant.id);
    const counts = await this.datasets.ingestionCounts(rows.map((row) => row.id));
    const pending = [...counts.values()].reduce((sum, count) => sum + count.files_pending, 0);
    const failing = rows.filter((row) => row.status === 'error').map((row) => row.name);
    return [
      {
        dtype: 'local_file',
        status: failing.length > 0 ? 'degraded' : 'running',
        message:
          failing.length > 0
            ? `Datasets that could not start: ${failing.join(', ')}`
            : `${rows.length} dataset(s), ${pending} file(s) waiting to be indexed`,
        details: {
          embedder: this.rules.defaultEmbedder,
          dimension: this.rules.defaultEmbedder.startsWith('use-lite') ? USE_LITE_DIMENSION : null,
          vector_store: this.rules.searchEngine?.vectorStore ?? null,
          vector_store_version: this.rules.searchEngine?.vectorStoreVersion ?? null,
          keyword_index: this.rules.searchEngine?.keywordIndex ?? null,
          ...(this.rules.searchEngine?.vectorsMissing ? { vectors_missing: this.rules.searchEngine.vectorsMissing } : {}),
          ranking: RANKING,
          calibration: calibrationFor(this.rules.defaultEmbedder).name,
          datasets: rows.length,
          pending_jobs: pending,
        },
      },
    ];
  }

  /** Per-file ingestion state, ordered by path. */
  async listFiles(tenant: Tenant, id: string, skip: number, limit: number): Promise<{ items: FileViewData[]; total: number }> {
    await this.require(tenant, id);
    const [rows, total] = await Promise.all([this.files.list(id, skip, limit), this.files.count(id)]);
    return {
      items: rows.map((row) => ({
        path: row.path,
        status: row.status,
        chunks: row.chunks,
        chunks_embedded: row.chunks_embedded,
        error: row.error,
        updated_at: row.updated_at,
      })),
      total,
    };
  }

  /** How each feed of an `rss` dataset is doing (none for another type). */
  async feeds(tenant: Tenant, id: string): Promise<FeedStateView[]> {
    const row = await this.require(tenant, id);
    if (row.dtype !== 'rss' || !this.feedStates) return [];
    return this.feedStates.states(id);
  }

  /** The configuration with its secrets readable (as the search and ingestion see it). */
  async openConfiguration(tenant: Tenant, id: string): Promise<DatasetConfiguration> {
    return (await this.require(tenant, id)).configuration;
  }

  private async require(tenant: Tenant, id: string): Promise<DatasetRecord> {
    const row = await this.datasets.get(tenant.id, id);
    if (!row) throw new NotFoundError(`Dataset '${id}' not found`);
    return row;
  }

  private async view(row: DatasetRecord): Promise<DatasetViewData> {
    const counts = await this.datasets.ingestionCounts([row.id]);
    return toView(row, counts.get(row.id), (await this.fits([row.id])).get(row.id), this.rules.searchEngine?.vectorsMissing);
  }

  /** The fitted calibrations by dataset id; a dataset without an index yet has none. */
  private async fits(ids: readonly string[]): Promise<Map<string, FittedCalibration>> {
    if (!this.calibrations || ids.length === 0) return new Map();
    const fits = await this.calibrations.fittedCalibrations(ids);
    return new Map(
      ids.map((id) => [id, fits.get(id.toLowerCase())] as const).filter((entry): entry is [string, FittedCalibration] => !!entry[1]),
    );
  }
}

function toView(row: DatasetRecord, counts = NO_FILES, fitted?: FittedCalibration, vectorsMissing?: string): DatasetViewData {
  const own = fitted?.embedder === row.configuration.embedder ? fitted : undefined;
  return {
    id: row.id,
    name: row.name,
    summary: row.summary,
    dtype: row.dtype,
    configuration: datasetConfigurationView(row.configuration),
    status: row.status,
    search: {
      ranking: RANKING,
      calibration: own ? own.calibration.name : calibrationFor(row.configuration.embedder).name,
      fitted: own ? { fitted_at: own.fittedAt, questions: own.questions, unanswerable: own.unanswerable, chunks: own.chunkCount } : null,
      vectors_missing: vectorsMissing ?? null,
    },
    error: row.error,
    ingestion: counts,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
