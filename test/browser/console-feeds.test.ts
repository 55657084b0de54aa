/**
 * The `rss` dataset type in the console (issue 27, item 1), in Chromium and by keyboard alone: the "Add a
 * dataset" form offers the type that `GET /api/v1/types` lists, its form built from the type's schema (the feed
 * URLs a text box, one per line, and the interval a list beside them, not under "More settings"); the dataset
 * is added, and its page shows each feed's state: read with its items counted, or failing with its reason.
 *
 * knode runs in this process (a loopback port) with a local https feed server (test/fakes/feed-server.ts)
 * whose certificate the test trusts. Screenshots go where the other browser tests' go.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { type FeedServer, startFeedServer } from '../fakes/feed-server.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { openConsoleSession, SCREENSHOTS } from './console-session.ts';
import { type BrowserSession, type Problems, press, tabTo, typeInto, unlabelledControls, visit, waitForPath, waitForText } from './page.ts';

describe('rss datasets in the console', () => {
  let server: FeedServer;
  let t: TestApp;
  let owner: TestUser;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  let problems: Problems;

  beforeAll(async () => {
    server = startFeedServer();
    server.feed('/blog.xml', 'rss', [
      {
        guid: 'post-1',
        title: 'Harbour lights',
        link: 'https://blog.example/1',
        date: new Date(Date.UTC(2026, 0, 5)),
        html: '<p>Lanterns.</p>',
      },
      { guid: 'post-2', title: 'Storm tides', link: 'https://blog.example/2', date: new Date(Date.UTC(2026, 0, 6)), html: '<p>Tides.</p>' },
    ]);
    server.fail('/down.xml', 503);
    t = await createTestApp({}, undefined, { feedTls: { ca: server.ca } });
    owner = await t.user('feeder');
    ({ url, browser, page, problems } = await openConsoleSession(t, owner));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await server?.stop();
  });

  test('the form offers the type, takes feed URLs and an interval, and the page shows each feed', async () => {
    await visit(page, `${url}/datasets/new`);
    // The arrow keys move a focused list to its next option: local_file, then rss.
    await tabTo(page, { label: 'Type' });
    await page.keyboard.press('ArrowDown');
    expect(await page.$eval('select', (select) => (select as HTMLSelectElement).value)).toBe('rss');
    await waitForText(page, 'body', 'knode polls the feeds (https only)');
    // The interval is beside the URLs, not under "More settings"; ingestionPath and fileTypes are not asked for.
    expect(await page.$$eval('details.more select[name="interval"]', (found) => found.length)).toBe(0);
    expect(await page.$$eval('[name="ingestionPath"], [name="fileTypes"]', (found) => found.length)).toBe(0);

    await typeInto(page, { label: 'Name' }, 'Team blog');
    await tabTo(page, { selector: 'textarea[name="feeds"]' });
    await page.keyboard.type(`${server.origin}/blog.xml`);
    await page.keyboard.press('Enter');
    await page.keyboard.type(`${server.origin}/down.xml`);
    await tabTo(page, { selector: 'select[name="interval"]' });
    const before = await page.$eval('select[name="interval"]', (select) => (select as HTMLSelectElement).value);
    // From the default (or the empty choice) to the next interval by keyboard.
    await page.keyboard.press('ArrowDown');
    const interval = await page.$eval('select[name="interval"]', (select) => (select as HTMLSelectElement).value);
    expect(interval).not.toBe(before);
    expect(['15m', '1h', '6h', '1d']).toContain(interval);
    expect(await unlabelledControls(page)).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, '50-rss-dataset-form.png'), fullPage: true });

    await press(page, { text: 'Add the dataset' });
    await waitForPath(page, /^\/datasets\/[0-9a-f-]{36}$/);
    // The blog's row: read, its two items counted; the page asks for the feeds again as the dataset's view moves.
    await waitForText(page, 'section[aria-labelledby="feeds-title"] tbody tr:first-child', 'read', 20_000);
    await waitForText(page, 'section[aria-labelledby="feeds-title"] tbody tr:first-child td.num', '2', 20_000);
    await waitForText(page, 'section[aria-labelledby="feeds-title"]', 'down.xml');
    await waitForText(page, 'section[aria-labelledby="feeds-title"] .error-text', 'answered 503', 20_000);
    await waitForText(page, 'section[aria-labelledby="feeds-title"]', '1 failing: tried again at the next poll');
    await waitForText(page, 'table.files', 'post-2', 20_000);
    // The card counts what the list shows within seconds, not at the next 15-second poll (it said "0 of 0 files").
    await waitForText(page, 'section[aria-labelledby="progress-title"] [data-stat="indexed"]', 'of 2 files', 5_000);
    await page.screenshot({ path: join(SCREENSHOTS, '51-rss-dataset-page.png'), fullPage: true });

    const datasets = (await t.request({ method: 'GET', url: '/api/v1/datasets/', token: owner.token })).json();
    expect(datasets[0]).toMatchObject({ name: 'Team blog', dtype: 'rss', configuration: { interval } });
    expect(datasets[0].configuration.feeds).toEqual([`${server.origin}/blog.xml`, `${server.origin}/down.xml`]);
    expect(problems).toEqual({ console: [], requests: [] });
  }, 90_000);
});
