/**
 * An ingestion engine of the test's own on a test app's database, with the parser pool the test chooses
 * (a lowered budget, a worker that hangs on purpose). The datasets are created through the API, so that
 * their rows and roots are real, then stopped there and started on this engine instead; the API still
 * reads their files' statuses and searches them.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { isPostgres } from '../../src/db/database.ts';
import { IngestionEngine } from '../../src/ingestion/engine.ts';
import { FileRepository } from '../../src/ingestion/files-repository.ts';
import type { ParserPool } from '../../src/ingestion/parser-pool.ts';
import type { IngestedDataset, IngestionStatus } from '../../src/ingestion/ports.ts';
import { PostgresVectorStore } from '../../src/vectors/postgres/store.ts';
import { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';
import type { TestApp, TestUser } from './app.ts';
import { Dataset } from './datasets.ts';

export interface OwnEngine {
  engine: IngestionEngine;
  /** The last status the engine gave each dataset, with its reason. */
  statuses: Map<string, { status: IngestionStatus; error?: string | null }>;
  /** A dataset on a new empty folder under `name`, running on this engine (the app's engine leaves it alone). */
  dataset(user: TestUser, name: string): Promise<Dataset>;
  close(): Promise<void>;
}

/** Its embedder is an OpenAI-compatible double of its own (the tests here look at the keyword phase only). */
export async function ownEngine(t: TestApp, pool: ParserPool): Promise<OwnEngine> {
  const embedder = startFakeOpenAI({ embeddingDimensions: 8 });
  const configurations = new Map<string, IngestedDataset>();
  const statuses: OwnEngine['statuses'] = new Map();
  const engine = new IngestionEngine({
    config: t.services.config,
    datasets: {
      listActive: async () => [],
      getAnyTenant: async (id) => configurations.get(id),
      // The folder each dataset was created with: its selection of one (migration 0021).
      selection: async (id) => {
        const path = configurations.get(id)?.configuration.ingestionPath;
        return path ? [{ path, kind: 'folder' as const, prefix: '' }] : [];
      },
      setStatus: async (id, status, error) => void statuses.set(id, { status, error }),
    },
    files: new FileRepository(t.services.database.db),
    store: isPostgres(t.services.database.db)
      ? await PostgresVectorStore.open(t.services.database.db)
      : new SqliteVectorStore(t.services.database),
    pool,
    log: t.services.log,
    roots: t.services.ingestionRoots,
    // The embedding double on loopback: the outbound policy is not what these tests look at.
    outbound: async () => ({ fetch, scope: 'the test' }),
  });
  const configuration = { embedder: 'openai:fake-embed', base_url: embedder.url, chunkSize: 1000, chunkOverlap: 0 };
  return {
    engine,
    statuses,
    async dataset(user, name) {
      const folder = join(t.dataDir, name);
      mkdirSync(folder);
      const dataset = await Dataset.create(t, user, folder, configuration);
      await dataset.until('running on the app', (view) => view.status === 'running');
      await dataset.action('stop');
      await dataset.until('stopped on the app', (view) => view.status === 'stopped');
      const tenant = await t.tenant(user);
      configurations.set(dataset.id, {
        id: dataset.id,
        tenant_id: tenant.id,
        configuration: { ...configuration, ingestionPath: folder, fileTypes: ['pdf', 'txt', 'md', 'docx', 'html', 'htm'] },
      });
      await engine.start(dataset.id);
      return dataset;
    },
    async close() {
      await engine.close();
      await pool.close();
      await embedder.close();
    },
  };
}
