import { statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Static } from 'typebox';
import type { Config } from '../config.ts';
import { type Db, isPostgres } from '../db/database.ts';
import type { Principal } from '../domain/principal.ts';
import { isDevelopmentMode } from '../http/development-mode.ts';
import type { IngestionRoots } from '../tenants/ingestion-roots.ts';
import type { VectorStore } from '../vectors/store.ts';
import type { DatasetRepository } from './repository.ts';
import type { StorageView } from './schemas.ts';

export interface StorageDeps {
  config: Pick<Config, 'developmentMode' | 'dataDir'>;
  datasets: Pick<DatasetRepository, 'list'>;
  store: Pick<VectorStore, 'diskUse'>;
  owners: Pick<IngestionRoots, 'isFirstOwner'>;
  /** Where the state is: SQLite's file in the data folder, or in cluster mode a PostgreSQL database. */
  db: Db;
}

/** Where knode keeps its data (the operator's to see) and what each of a tenant's datasets takes. */
export type StorageReport = Static<typeof StorageView>;

/** The disk use of knode's data (GET /settings/storage). */
export class StorageService {
  constructor(private readonly deps: StorageDeps) {}

  /** The tenant's datasets for anyone of it; the data folder and the database's size for the operator only. */
  async report(principal: Principal): Promise<StorageReport> {
    const developmentMode = isDevelopmentMode(this.deps.config);
    const operator = await this.isOperator(principal, developmentMode);
    const datasets = await this.deps.datasets.list(principal.tenant.id);
    return {
      development_mode: developmentMode,
      data_dir: operator ? this.deps.config.dataDir : null,
      database_bytes: operator ? await this.databaseBytes() : null,
      datasets: await Promise.all(
        datasets.map(async (dataset) => ({ id: dataset.id, name: dataset.name, bytes: await this.deps.store.diskUse(dataset.id) })),
      ),
    };
  }

  /** The database's size: SQLite's file with its write-ahead log, or the PostgreSQL database of cluster mode. */
  private async databaseBytes(): Promise<number> {
    const { db, config } = this.deps;
    if (isPostgres(db)) {
      const { rows } = await sql<{ bytes: number }>`SELECT pg_database_size(current_database()) AS bytes`.execute(db);
      return Number(rows[0]?.bytes ?? 0);
    }
    const database = join(config.dataDir, 'knode.db');
    return fileBytes(database) + fileBytes(`${database}-wal`);
  }

  /**
   * The operator: the admin key (or, in development mode, this machine's tools without a token), or in
   * development mode the laptop's owner (the first owner's tenant) at the console. Another tenant's user
   * never learns where the data lives.
   */
  private async isOperator(principal: Principal, developmentMode: boolean): Promise<boolean> {
    return principal.kind === 'admin' || (developmentMode && (await this.deps.owners.isFirstOwner(principal.tenant.id)));
  }
}

/** A file's size, 0 when it is not there (no write-ahead log yet). */
function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
