/**
 * Finding 2: ingestion read outside SVC_INGESTION_ROOTS when a sub-folder, or the dataset folder itself,
 * was replaced by a symbolic link while the dataset was stopped, then started or reindexed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, type TestApp, type TestUser, tempDir } from '../helpers/app.ts';
import { Dataset } from '../helpers/datasets.ts';
import { waitFor } from '../helpers/wait.ts';

const SECRET = 'SECRETOUTSIDE the private text of a folder outside every ingestion root';

describe('ingestion stays inside the dataset folder and the ingestion roots', () => {
  let t: TestApp;
  let owner: TestUser;
  let outside: string;
  /** A running dataset of its own folder, to tell when watchers and indexing have caught up. */
  let control: Dataset;

  beforeAll(async () => {
    t = await createTestApp();
    // The first user registered in development mode owns SVC_INGESTION_ROOTS (= the data dir here).
    owner = await t.user('paths-owner');
    control = await Dataset.create(t, owner);
    outside = tempDir('knode-outside-');
    writeFileSync(join(outside, 'a.txt'), SECRET);
    writeFileSync(join(outside, 'b.txt'), SECRET);
  });

  afterAll(async () => {
    await t.close();
    rmSync(outside, { recursive: true, force: true });
  });

  /** A folder inside the roots holding `sub/a.txt`, indexed, then stopped. */
  async function stoppedDataset(name: string) {
    const folder = join(t.dataDir, name);
    mkdirSync(join(folder, 'sub'), { recursive: true });
    writeFileSync(join(folder, 'sub/a.txt'), 'the dataset own text about harbours');
    writeFileSync(join(folder, 'a.txt'), 'the dataset own text about lighthouses');
    const dataset = await Dataset.create(t, owner, folder);
    expect(await dataset.settledFile('sub/a.txt')).toMatchObject({ status: 'indexed', error: null });
    expect(await dataset.settledFile('a.txt')).toMatchObject({ status: 'indexed', error: null });
    expect((await dataset.action('stop')).statusCode).toBe(200);
    return { folder, dataset };
  }

  test('a sub-folder swapped for a symlink to outside the roots while the dataset is stopped is not read after start', async () => {
    const { folder, dataset } = await stoppedDataset('swapped-sub');
    renameSync(join(folder, 'sub'), join(tempDir('knode-moved-'), 'sub'));
    symlinkSync(outside, join(folder, 'sub'));

    expect((await dataset.action('start')).statusCode).toBe(200);
    // A reindex reads every known file again: sub/a.txt now leads outside.
    expect((await dataset.action('reindex')).statusCode).toBe(202);
    const file = await waitFor('sub/a.txt to be refused', async () => {
      const state = await dataset.file('sub/a.txt');
      return state?.status === 'failed' || state?.status === 'removed' || state?.status === 'indexed' ? state : undefined;
    });
    expect(file.status).toBe('failed');
    expect(file.error).toContain('outside the dataset folder');
    expect(await dataset.settledFile('a.txt')).toMatchObject({ status: 'indexed', error: null });
    expect(await dataset.storedText()).not.toContain('SECRETOUTSIDE');
  });

  test('the dataset folder itself swapped for a symlink is refused at start', async () => {
    const { folder, dataset } = await stoppedDataset('swapped-root');
    renameSync(folder, `${folder}-moved`);
    symlinkSync(outside, folder);

    const started = await dataset.action('start');
    expect(started.statusCode).toBe(200);
    const view = await dataset.view();
    expect(view.status).toBe('error');
    expect(view.error).toBe(`the folder '${folder}' now resolves to '${outside}', outside this tenant's ingestion roots`);
    await control.caughtUp(); // nothing of the refused folder is indexed meanwhile
    expect((await dataset.files()).map((file) => file.path).sort()).toEqual(['a.txt', 'sub/a.txt']);
    expect(await dataset.storedText()).not.toContain('SECRETOUTSIDE');
  });

  test('the dataset folder itself swapped for a symlink is refused at reindex', async () => {
    const folder = join(t.dataDir, 'swapped-running');
    mkdirSync(folder);
    writeFileSync(join(folder, 'a.txt'), 'the dataset own text about lighthouses');
    const dataset = await Dataset.create(t, owner, folder);
    expect(await dataset.settledFile('a.txt')).toMatchObject({ status: 'indexed', error: null });
    renameSync(folder, `${folder}-moved`);
    symlinkSync(outside, folder);

    expect((await dataset.action('reindex')).statusCode).toBe(202);
    const view = await waitFor('the dataset to stop with an error', async () => {
      const current = await dataset.view();
      return current.status === 'error' ? current : undefined;
    });
    expect(view.error).toContain(`now resolves to '${outside}', outside this tenant's ingestion roots`);
    await control.caughtUp(); // nothing of the refused folder is indexed meanwhile
    expect((await dataset.files()).map((file) => file.path)).toEqual(['a.txt']);
    expect(await dataset.storedText()).not.toContain('SECRETOUTSIDE');
  });
});
