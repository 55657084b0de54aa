import { Database as SqliteDatabase } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { kyselyAdapter } from '../src/db/database.ts';
import { migrations } from '../src/db/migrations/index.ts';
import { createTestApp, type TestApp, type TestUser, tempDir, validationIssues } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';
import { waitFor } from './helpers/wait.ts';

/** A selection entry as GET /api/v1/datasets/{id}/selection lists it. */
interface Entry {
  path: string;
  kind: 'file' | 'folder';
  source: string;
  files: number;
  chunks: number;
  status: string;
  progress: number;
}

/** A new folder in the data directory (the tenants' root) holding `files`. */
function folderWith(t: TestApp, name: string, files: Record<string, string>): string {
  const folder = join(t.dataDir, 'picked', `${name}-${crypto.randomUUID().slice(0, 6)}`);
  mkdirSync(folder, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(folder, file), text);
  return folder;
}

function selectionOf(t: TestApp, user: TestUser | undefined, id: string) {
  return t.request({ method: 'GET', url: `/api/v1/datasets/${id}/selection`, token: user?.token });
}

function change(t: TestApp, user: TestUser | undefined, id: string, method: 'POST' | 'DELETE', paths: string[]) {
  return t.request({ method, url: `/api/v1/datasets/${id}/selection`, token: user?.token, payload: { paths } });
}

/** Waits until every entry is settled (indexed or failed, or empty) and returns the selection. */
async function settledSelection(t: TestApp, user: TestUser, id: string, entries: number): Promise<Entry[]> {
  return waitFor(`the selection of ${id} to settle`, async () => {
    const list = (await selectionOf(t, user, id)).json() as Entry[];
    return list.length === entries && list.every((entry) => entry.status === 'indexed' || entry.status === 'failed') ? list : undefined;
  });
}

describe('dataset selections', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let outside: string;

  beforeAll(async () => {
    t = await createTestApp();
    alice = await t.user();
    bob = await t.user();
    outside = tempDir('knode-selection-outside-');
  });
  afterAll(async () => {
    await t.close();
    rmSync(outside, { recursive: true, force: true });
  });

  test('a dataset created with ingestionPath lists its folder as its one entry', async () => {
    const folder = folderWith(t, 'first', { 'a.txt': 'A note about orchids and their roots.' });
    const dataset = await Dataset.create(t, alice, folder);
    await dataset.indexed();
    const list = (await selectionOf(t, alice, dataset.id)).json() as Entry[];
    expect(list).toEqual([expect.objectContaining({ path: folder, kind: 'folder', source: '', files: 1, status: 'indexed', progress: 1 })]);
    expect((await dataset.search('orchids'))[0]?.metadata.source).toBe('a.txt');
  });

  test('adds a folder and a file: both indexed and searchable under unambiguous sources; removing one removes its chunks', async () => {
    const first = folderWith(t, 'base', { 'a.txt': 'A note about orchids in the greenhouse.' });
    const dataset = await Dataset.create(t, alice, first);
    await dataset.indexed();
    const second = folderWith(t, 'more', { 'b.txt': 'A note about tulips in spring.' });
    const loose = folderWith(t, 'loose', { 'c.md': '# Cacti\n\nA note about cacti in the desert.' });
    const added = await change(t, alice, dataset.id, 'POST', [second, join(loose, 'c.md')]);
    expect(added.statusCode).toBe(200);
    const list = await settledSelection(t, alice, dataset.id, 3);
    const folderName = basename(second);
    expect(list.map((entry) => [entry.kind, entry.source, entry.files, entry.status])).toEqual([
      ['folder', '', 1, 'indexed'],
      ['folder', folderName, 1, 'indexed'],
      ['file', 'c.md', 1, 'indexed'],
    ]);
    expect((await dataset.search('tulips'))[0]?.metadata.source).toBe(`${folderName}/b.txt`);
    expect((await dataset.search('cacti desert'))[0]?.metadata.source).toBe('c.md');

    // The added folder is watched: a file saved into it is indexed without a restart.
    writeFileSync(join(second, 'd.txt'), 'A note about daffodils by the river.');
    expect((await dataset.settledFile(`${folderName}/d.txt`)).status).toBe('indexed');

    // Adding the same folder again is merged; a folder inside a selected one is refused, naming it.
    expect(((await change(t, alice, dataset.id, 'POST', [second])).json() as Entry[]).length).toBe(3);
    const nested = join(first, 'inner');
    mkdirSync(nested);
    const refused = validationIssues(await change(t, alice, dataset.id, 'POST', [nested]));
    expect(refused[0]).toEqual({ loc: ['body', 'paths', 0], msg: expect.stringContaining(`'${nested}'`), type: 'value_error' });

    const removed = await change(t, alice, dataset.id, 'DELETE', [second]);
    expect(removed.statusCode).toBe(200);
    expect((removed.json() as Entry[]).map((entry) => entry.source)).toEqual(['', 'c.md']);
    await waitFor('the removed folder to leave the index', async () => {
      const sources = await dataset.indexedSources();
      return !sources.some((source) => source.startsWith(`${folderName}/`)) && sources;
    });
    expect(await dataset.indexedSources()).toEqual(['a.txt', 'c.md']);
    expect((await dataset.search('tulips daffodils')).map((hit) => hit.metadata.source)).not.toContain(`${folderName}/b.txt`);
    const live = (await dataset.files()).filter((file) => file.status !== 'removed').map((file) => file.path);
    expect(live.sort()).toEqual(['a.txt', 'c.md']);
    // The view's ingestionPath stays the oldest entry's.
    expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${dataset.id}`, token: alice.token })).json().configuration).toEqual(
      expect.objectContaining({ ingestionPath: first }),
    );
  });

  test('refuses a path outside the roots, a missing one and a file of another type with 422 naming each', async () => {
    const dataset = await Dataset.create(t, alice, folderWith(t, 'checks', {}));
    const missing = join(t.dataDir, 'picked', 'nowhere');
    const image = join(folderWith(t, 'img', { 'photo.png': 'not text' }), 'photo.png');
    const issues = validationIssues(await change(t, alice, dataset.id, 'POST', [outside, missing, image]));
    expect(issues.map((issue) => issue.loc)).toEqual([
      ['body', 'paths', 0],
      ['body', 'paths', 1],
      ['body', 'paths', 2],
    ]);
    expect(issues[0]?.msg).toContain(`'${outside}'`);
    expect(issues[0]?.msg).toContain('Must be inside');
    expect(issues[1]?.msg).toBe(`'${missing}': '${missing}' does not exist`);
    expect(issues[2]?.msg).toContain("is not one of the dataset's file types");
    // A symbolic link inside the roots that leads outside them is refused like the path it leads to.
    const link = join(t.dataDir, 'picked', `link-${crypto.randomUUID().slice(0, 6)}`);
    symlinkSync(outside, link);
    expect(validationIssues(await change(t, alice, dataset.id, 'POST', [link]))[0]?.msg).toContain(`'${link}': Must be inside`);
    // Nothing was added.
    expect(((await selectionOf(t, alice, dataset.id)).json() as Entry[]).length).toBe(1);
    // Removing what is not selected is a 422 too; an empty list is refused by the schema.
    expect(validationIssues(await change(t, alice, dataset.id, 'DELETE', [missing]))[0]?.msg).toContain('is not in the');
    expect(validationIssues(await change(t, alice, dataset.id, 'POST', [])).length).toBe(1);
  });

  test("another tenant's dataset answers 404, and no credentials 401", async () => {
    const dataset = await Dataset.create(t, alice, folderWith(t, 'private', {}));
    const path = folderWith(t, 'bobs', {});
    expect((await selectionOf(t, bob, dataset.id)).statusCode).toBe(404);
    expect((await change(t, bob, dataset.id, 'POST', [path])).statusCode).toBe(404);
    expect((await change(t, bob, dataset.id, 'DELETE', [path])).statusCode).toBe(404);
    const anonymous = await selectionOf(t, undefined, dataset.id);
    expect(anonymous.statusCode).toBe(401);
    expect((await change(t, undefined, dataset.id, 'POST', [path])).statusCode).toBe(401);
  });
});

describe('dataset selections across a restart', () => {
  test('the selection is kept, and its entries are scanned again', async () => {
    const dataDir = tempDir();
    const first = await createTestApp({}, dataDir);
    const user = await first.user();
    const base = folderWith(first, 'base', { 'a.txt': 'A note about orchids.' });
    const dataset = await Dataset.create(first, user, base);
    const extra = folderWith(first, 'extra', { 'b.txt': 'A note about tulips.' });
    expect((await change(first, user, dataset.id, 'POST', [extra])).statusCode).toBe(200);
    await settledSelection(first, user, dataset.id, 2);
    await first.close({ keepData: true });

    writeFileSync(join(extra, 'c.txt'), 'A note about lilies, written while knode was down.');
    const second = await createTestApp({}, dataDir);
    try {
      const list = await waitFor('c.txt to be counted', async () => {
        const entries = await settledSelection(second, user, dataset.id, 2);
        return entries[1]?.files === 2 ? entries : undefined;
      });
      expect(list.map((entry) => [entry.path, entry.source])).toEqual([
        [base, ''],
        [extra, basename(extra)],
      ]);
      const again = new Dataset(second, user, dataset.id, base);
      expect((await again.search('lilies'))[0]?.metadata.source).toBe(`${basename(extra)}/c.txt`);
    } finally {
      await second.close();
    }
  });
});

describe('upgrading to selections (migration 0021)', () => {
  test('each existing local_file dataset gets one entry, its ingestionPath; an rss dataset none', async () => {
    const dataDir = tempDir();
    try {
      const sqlite = new SqliteDatabase(join(dataDir, 'knode.db'), { create: true });
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: kyselyAdapter(sqlite) }) });
      const migrate = (before: string) =>
        new Migrator({
          db,
          provider: { getMigrations: async () => Object.fromEntries(Object.entries(migrations).filter(([name]) => name < before)) },
        }).migrateToLatest();
      expect((await migrate('0021')).error).toBeUndefined();
      const at = '2026-01-01T00:00:00.000Z';
      sqlite.run(`INSERT INTO tenants (id, name, created_at) VALUES ('t', 'acme', '${at}')`);
      sqlite.run(`INSERT INTO datasets (id, tenant_id, name, dtype, configuration, status, created_at, updated_at) VALUES
        ('folder', 't', 'folder', 'local_file', '{"ingestionPath":"/data/papers","chunkSize":1000}', 'running', '${at}', '${at}'),
        ('feeds', 't', 'feeds', 'rss', '{"feeds":["https://example.com/feed.xml"]}', 'running', '${at}', '${at}')`);
      expect((await migrate('0022')).error).toBeUndefined();
      expect(sqlite.query('SELECT dataset_id, path, kind, position, prefix, added_at FROM dataset_selection').all()).toEqual([
        { dataset_id: 'folder', path: '/data/papers', kind: 'folder', position: 0, prefix: '', added_at: at },
      ]);
      await db.destroy();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
