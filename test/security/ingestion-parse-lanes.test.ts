/**
 * Issue 22, item 4 (starvation): parsing had one thread, taken by files in turns across datasets, so a
 * dataset's slow file held every other dataset's files behind it: three small files of another dataset
 * waited 359 s behind three copies of a 100,000-page PDF. Now a dataset's files hold one thread at most and
 * a second is kept for the other datasets (parser-pool.ts).
 *
 * The slow files here never finish: the parse worker is the real one except for names holding `hang`
 * (test/fixtures/hanging-parse-worker.ts). So the test can look at what happened while they parse,
 * without measuring a duration.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ParserPool } from '../../src/ingestion/parser-pool.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { type OwnEngine, ownEngine } from '../helpers/engine.ts';
import { waitFor } from '../helpers/wait.ts';

const HANGING_WORKER = new URL('../fixtures/hanging-parse-worker.ts', import.meta.url);

describe('parse lanes', () => {
  let t: TestApp;
  let owner: TestUser;
  let own: OwnEngine;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('lanes-owner');
    // The default lanes (one thread per dataset, one spare) and time budget: the slow files outlast the test.
    own = await ownEngine(t, new ParserPool({ workerUrl: HANGING_WORKER }));
  });

  afterAll(async () => {
    await own.close();
    await t.close();
  }, 30_000);

  test("another dataset's small files become searchable while one dataset's slow files are parsing", async () => {
    const slow = await own.dataset(owner, 'slow');
    for (const name of ['hang-1.txt', 'hang-2.txt', 'hang-3.txt']) writeFileSync(join(slow.folder, name), 'never parsed');
    const started = (name: string) => existsSync(join(slow.folder, `${name}.started`));
    const first = await waitFor('one of the slow files to hold a parse thread', async () =>
      ['hang-1.txt', 'hang-2.txt', 'hang-3.txt'].find(started),
    );

    const small = await own.dataset(owner, 'small');
    const names = ['one.txt', 'two.md', 'three.txt'];
    for (const [i, name] of names.entries()) writeFileSync(join(small.folder, name), `Small note ${i} about lighthouse${i} keepers.`);
    const states = await waitFor(
      "the other dataset's files to be searchable",
      async () => {
        const files = await small.files();
        const done = files.filter((file) => file.status === 'searchable' || file.status === 'indexed');
        return done.length === names.length ? files : undefined;
      },
      20_000,
    );
    expect(states.map((file) => file.error)).toEqual([null, null, null]);
    expect((await small.search('lighthouse1 keepers')).map((hit) => hit.metadata.source)).toContain('two.md');

    // Meanwhile the slow dataset's first file is still parsing, and its other two wait for its one lane:
    // they did not take the thread the other dataset was using.
    expect((await slow.file(first))?.status).toBe('indexing');
    expect(['hang-1.txt', 'hang-2.txt', 'hang-3.txt'].filter(started)).toEqual([first]);
  }, 30_000);
});
