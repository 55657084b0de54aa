/**
 * Archiving an endpoint in the console (issue 27, item 7), in Chromium and by keyboard alone: the settings say
 * what archiving does and ask in place (the question takes the focus, Cancel gives it back); archived, the endpoint
 * is off the SyftHub double, its playground is refused, and the endpoint list shows it under "Archived", whose
 * Unarchive button publishes it again and moves the focus to its link among the endpoints in use.
 *
 * knode runs in this process (a loopback port), with the OpenAI-compatible and SyftHub test doubles.
 * Screenshots go where the other browser tests' go (test-output/screenshots/, or SCREENSHOTS_DIR).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';
import { connectMarketplace } from '../helpers/hub.ts';
import { openConsoleSession, SCREENSHOTS } from './console-session.ts';
import { type BrowserSession, type Problems, press, typeInto, unlabelledControls, visit, waitForText } from './page.ts';

describe('archiving an endpoint in the console', () => {
  let fake: FakeOpenAIServer;
  let hub: FakeSyftHub;
  let t: TestApp;
  let owner: TestUser;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  let problems: Problems;

  /** What has the focus: its tag, and its text or label. */
  const focused = () =>
    page.evaluate(() => {
      const element = document.activeElement as HTMLElement | null;
      return `${element?.tagName.toLowerCase()}: ${(element?.getAttribute('aria-label') ?? element?.textContent ?? '').trim()}`;
    });
  /** Waits until the focus is on what `focused` describes as `expected` (the console moves it after rendering). */
  const focusOn = async (expected: string) => {
    try {
      await page.waitForFunction(
        (wanted: string) => {
          const element = document.activeElement as HTMLElement | null;
          return (
            `${element?.tagName.toLowerCase()}: ${(element?.getAttribute('aria-label') ?? element?.textContent ?? '').trim()}` === wanted
          );
        },
        { timeout: 5_000 },
        expected,
      );
    } catch {
      expect(await focused()).toBe(expected); // says where the focus is instead
    }
  };
  const endpointView = async () => (await t.request({ method: 'GET', url: '/api/v1/endpoints/answers', token: owner.token })).json();

  beforeAll(async () => {
    fake = startFakeOpenAI();
    hub = await startFakeSyftHub();
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('ada');
    await connectMarketplace(t, owner, hub, 'ada', { name: 'SyftHub' });
    const modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url })).id;
    await createEndpoint(t, owner, { name: 'Answers', slug: 'answers', model_id: modelId, response_type: 'summary' });
    await createEndpoint(t, owner, { name: 'Notes', slug: 'notes', model_id: modelId, response_type: 'summary' });
    const published = await t.request({
      method: 'POST',
      url: '/api/v1/endpoints/answers/publish',
      token: owner.token,
      payload: { publish_to_all_marketplaces: true },
    });
    expect(published.json().results[0].success).toBe(true);
    ({ url, browser, page, problems } = await openConsoleSession(t, owner));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await hub?.close();
    await fake?.close();
  });

  test('archived from its settings after a confirmation that says what it does; Cancel gives the focus back', async () => {
    await visit(page, `${url}/endpoints/answers/settings`);
    await press(page, { text: 'Archive…' });
    await focusOn('h3: Archive Answers?');
    await waitForText(page, '[data-archive-confirm]', 'It is hidden from SyftHub: taken off the marketplaces it is published on (SyftHub)');
    await waitForText(page, '[data-archive-confirm]', 'Its queries are refused');
    await waitForText(page, '[data-archive-confirm]', 'It is kept with its policies and usage');
    expect(await unlabelledControls(page)).toEqual([]);

    await press(page, { text: 'Cancel' });
    await focusOn('button: Archive…');
    expect((await endpointView()).archived).toBe(false);

    await page.keyboard.press('Enter'); // the focus is on "Archive…" again
    await waitForText(page, '[data-archive-confirm]', 'Archive Answers?');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SCREENSHOTS, '41-archive-confirm.png'), fullPage: true });
    await press(page, { selector: '[data-archive-confirm] button.danger' });
    await waitForText(page, '[data-archive] h2', 'Archived');
    await focusOn('h2: Archived');
    await waitForText(page, '[data-archive]', 'Unarchiving publishes it again on SyftHub.');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SCREENSHOTS, '43-archived-settings.png'), fullPage: true });
    expect(await endpointView()).toMatchObject({ archived: true, published_to: [] });
    expect(hub.endpointsOf('ada').has('answers')).toBe(false);

    // Its playground is refused, saying why (the one failed request of this test).
    await visit(page, `${url}/endpoints/answers`);
    await typeInto(page, { label: 'Your question' }, 'Still there?');
    await press(page, { text: 'Ask' });
    await waitForText(page, '.answer-bubble .notice', 'Endpoint is archived');
    expect(problems.requests).toEqual([`POST ${url}/api/v1/endpoints/answers/query: 409`]);
    problems.requests.length = 0;
    expect(problems.console.filter((line) => !line.includes('409'))).toEqual([]);
    problems.console.length = 0;
  }, 60_000);

  test('the list shows it under Archived; Unarchive publishes it again and moves the focus to it', async () => {
    await visit(page, `${url}/endpoints`);
    await waitForText(page, '[data-endpoints="archived"] h2', 'Archived (1)');
    expect(
      await page.$$eval('[data-endpoints="in-use"] tbody tr', (rows) => rows.map((row) => row.querySelector('a')?.textContent)),
    ).toEqual(['Notes']);
    await page.screenshot({ path: join(SCREENSHOTS, '42-archived-list.png'), fullPage: true });
    await press(page, { text: 'Unarchive Answers' });
    await focusOn('a: Answers');
    await waitForText(page, '.notice', 'Answers is unarchived: it answers queries again');
    expect(await page.$('[data-endpoints="archived"]')).toBeNull();
    expect(await endpointView()).toMatchObject({ archived: false, published: true });
    expect(hub.endpointsOf('ada').has('answers')).toBe(true);
    expect(problems).toEqual({ console: [], requests: [] });
  }, 60_000);
});
