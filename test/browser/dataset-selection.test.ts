/**
 * A dataset's selection in the console (issue 27, item 3), in Chromium and by keyboard alone: the dataset page
 * lists the folder it was created with; the browser ticks a folder and a file in two other folders ("Add
 * selected" adds both at once), each entry then shows its own progress until indexed; Remove takes one out
 * and its files leave the index. knode runs in this process on a loopback port. Screenshots go where the
 * other browser tests' go.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { Dataset } from '../helpers/datasets.ts';
import { waitFor } from '../helpers/wait.ts';
import { openConsoleSession, SCREENSHOTS } from './console-session.ts';
import { type BrowserSession, type Problems, press, unlabelledControls, visit, waitForText } from './page.ts';

describe('dataset selections in the console', () => {
  let t: TestApp;
  let owner: TestUser;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  let problems: Problems;

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user('picker');
    ({ url, browser, page, problems } = await openConsoleSession(t, owner));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /**
   * The browser shows `path` and has moved the focus to its name (folder-listing.tsx, after the list is drawn):
   * a Tab pressed before that focus moved would find a button the focus then leaves (this failed once under load).
   */
  async function folderShown(path: string): Promise<void> {
    await waitForText(page, '.browser-path', path);
    await page.waitForFunction(() => document.activeElement?.classList.contains('browser-path'), { timeout: 15_000 });
  }

  test('ticks a folder and a file, adds both, shows each one indexed, and removes one', async () => {
    const picked = join(t.dataDir, 'picked');
    for (const [folder, file, text] of [
      ['base', 'a.txt', 'Orchids in the greenhouse.'],
      ['more', 'b.txt', 'Tulips in spring.'],
      ['loose', 'c.md', '# Cacti\n\nCacti in the desert.'],
    ] as const) {
      mkdirSync(join(picked, folder), { recursive: true });
      writeFileSync(join(picked, folder, file), text);
    }
    const dataset = await Dataset.create(t, owner, join(picked, 'base'));
    await dataset.indexed();

    await visit(page, `${url}/datasets/${dataset.id}`);
    await waitForText(page, 'ul.selection-list', join(picked, 'base'));
    await press(page, { text: 'Add files and folders' });
    await press(page, { label: `Open folder ${t.dataDir}` });
    await folderShown(t.dataDir);
    await press(page, { label: 'Open folder picked' });
    await folderShown(picked);
    await press(page, { label: 'Select the folder more' }, 'Space');
    await press(page, { label: 'Open folder loose' });
    await folderShown(join(picked, 'loose'));
    await press(page, { label: 'Select the file c.md' }, 'Space');
    await waitForText(page, '.browser-foot', '2 entries selected');
    expect(await unlabelledControls(page)).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, '60-dataset-selection-browser.png'), fullPage: true });

    await press(page, { text: 'Add selected' });
    await waitForText(page, 'ul.selection-list', join(picked, 'loose', 'c.md'));
    await waitFor('both entries indexed on the page', async () => {
      const rows = await page.$$eval('ul.selection-list > li', (items) => items.map((item) => item.textContent ?? ''));
      return rows.length === 3 && rows.every((row) => row.includes('indexed') && row.includes('1 of 1 files indexed'));
    });
    await Bun.sleep(500); // the bars' width moves in 0.4 s
    await page.screenshot({ path: join(SCREENSHOTS, '61-dataset-selection-entries.png'), fullPage: true });

    await press(page, { label: `Remove ${join(picked, 'more')}` });
    await waitFor('the folder removed from the page', async () => {
      const rows = await page.$$eval('ul.selection-list > li', (items) => items.length);
      return rows === 2;
    });
    await waitFor('its file gone from the index', async () => !(await dataset.indexedSources()).includes('more/b.txt'));
    expect(await dataset.indexedSources()).toEqual(['a.txt', 'c.md']);
    await page.screenshot({ path: join(SCREENSHOTS, '62-dataset-selection-removed.png'), fullPage: true });
    expect(problems).toEqual({ console: [], requests: [] });
  }, 90_000);
});
