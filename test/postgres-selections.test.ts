import { describe, expect, test } from 'bun:test';
import { DatasetRepository } from '../src/datasets/repository.ts';
import { insertEntries, liveFileStates, selectionOf as storedSelection } from '../src/datasets/selection-repository.ts';
import { openPostgresDatabase } from '../src/db/postgres/database.ts';
import { SecretBox } from '../src/security/secret-box.ts';
import { TenantRepository } from '../src/tenants/repository.ts';
import { startPostgres } from './helpers/postgres.ts';

/** A dataset's selection in cluster mode's database (its routes on SQLite: dataset-selection.test.ts). */
describe('selections on PostgreSQL (cluster mode)', () => {
  test('a dataset created there gets its first entry, entries are added in order, and file states are read', async () => {
    const postgres = await startPostgres();
    const pg = await openPostgresDatabase(postgres.url);
    try {
      const tenant = await new TenantRepository(pg.db).create('Selections');
      const datasets = new DatasetRepository(pg.db, new SecretBox(Buffer.alloc(32, 3)));
      const at = new Date().toISOString();
      const configuration = {
        ingestionPath: '/data/papers',
        collectionName: 'papers',
        fileTypes: ['txt'],
        chunkSize: 1000,
        chunkOverlap: 0,
        embedder: 'use-lite',
        cost_per_query: 0,
      };
      await datasets.insert({
        id: 'd1',
        tenant_id: tenant.id,
        name: 'papers',
        summary: '',
        dtype: 'local_file',
        configuration,
        status: 'stopped',
        error: null,
        created_at: at,
        updated_at: at,
      });
      await insertEntries(pg.db, 'd1', [
        { path: '/data/notes', kind: 'folder', prefix: 'notes', addedAt: at },
        { path: '/data/todo.txt', kind: 'file', prefix: 'todo.txt', addedAt: at },
      ]);
      expect((await datasets.selection('d1')).map((entry) => [entry.path, entry.kind, entry.prefix])).toEqual([
        ['/data/papers', 'folder', ''],
        ['/data/notes', 'folder', 'notes'],
        ['/data/todo.txt', 'file', 'todo.txt'],
      ]);
      await pg.db
        .insertInto('dataset_files')
        .values({ dataset_id: 'd1', path: 'notes/a.txt', status: 'indexed', chunks: 3, updated_at: at } as never)
        .execute();
      expect(await liveFileStates(pg.db, 'd1')).toEqual([{ path: 'notes/a.txt', status: 'indexed', chunks: 3, chunksEmbedded: 0 }]);
      await datasets.setIngestionPath(tenant.id, 'd1', '/data/notes');
      expect((await datasets.get(tenant.id, 'd1'))?.configuration.ingestionPath).toBe('/data/notes');
      expect((await storedSelection(pg.db, 'd1')).length).toBe(3);
    } finally {
      await pg.close();
      await postgres.stop();
    }
  }, 60_000);
});
