import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config.ts';
import type { Principal } from '../domain/principal.ts';
import { requirePrincipal } from '../http/principal.ts';
import type { IngestionRoots } from '../tenants/ingestion-roots.ts';
import type { VectorStore } from '../vectors/store.ts';
import type { DatasetRepository } from './repository.ts';

const StorageView = Type.Object({
  /** No SVC_ADMIN_API_KEY: the operator's routes are open to requests made on this machine. */
  development_mode: Type.Boolean(),
  /** SVC_DATA_DIR and the database's size (with its write-ahead log): shown to the operator only. */
  data_dir: Type.Union([Type.String(), Type.Null()]),
  database_bytes: Type.Union([Type.Integer(), Type.Null()]),
  /** The tenant's datasets and about how much of the database each index takes. */
  datasets: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), bytes: Type.Integer() })),
});

export interface StorageDeps {
  config: Pick<Config, 'adminApiKey' | 'dataDir'>;
  datasets: Pick<DatasetRepository, 'list'>;
  store: Pick<VectorStore, 'diskUse'>;
  owners: Pick<IngestionRoots, 'isFirstOwner'>;
}

/**
 * The operator: the admin key (or, in development mode, this machine's tools without a token), or in
 * development mode the laptop's owner (the first owner's tenant) at the console. Another tenant's user
 * never learns where the data lives.
 */
async function isOperator(principal: Principal, developmentMode: boolean, owners: StorageDeps['owners']): Promise<boolean> {
  return principal.kind === 'admin' || (developmentMode && (await owners.isFirstOwner(principal.tenant.id)));
}

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** GET /settings/storage: where knode keeps its data and what each of the tenant's datasets takes. */
export function storageRoutes(deps: StorageDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/settings/storage', {
      config: { auth: 'tenant' },
      schema: { tags: ['settings'], response: { 200: StorageView } },
      handler: async (request) => {
        const principal = requirePrincipal(request);
        const developmentMode = deps.config.adminApiKey === '';
        const operator = await isOperator(principal, developmentMode, deps.owners);
        const database = join(deps.config.dataDir, 'knode.db');
        const datasets = await deps.datasets.list(principal.tenant.id);
        return {
          development_mode: developmentMode,
          data_dir: operator ? deps.config.dataDir : null,
          database_bytes: operator ? fileBytes(database) + fileBytes(`${database}-wal`) : null,
          datasets: await Promise.all(
            datasets.map(async (dataset) => ({ id: dataset.id, name: dataset.name, bytes: await deps.store.diskUse(dataset.id) })),
          ),
        };
      },
    });
  };
}
