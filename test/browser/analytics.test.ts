/**
 * The console's Analytics page in Chromium, by keyboard: reached from the main navigation, its summary
 * cards, charts, top users and word cloud for the queries asked through the API, filtered to one endpoint,
 * and usable at 390 px. Screenshots go where the other browser tests' go (test-output/screenshots/).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';
import { openConsoleSession, SCREENSHOTS } from './console-session.ts';
import { type BrowserSession, press, tabTo, textOf, unlabelledControls, visit, waitForPath, waitForText, watch } from './page.ts';

describe('the Analytics page', () => {
  let t: TestApp;
  let fake: FakeOpenAIServer;
  let owner: TestUser;
  let url: string;
  let browser: BrowserSession;
  let page: Page;

  const ask = (slug: string, question: string) =>
    t.request({ method: 'POST', url: `/api/v1/endpoints/${slug}/query`, token: owner.token, payload: { messages: question } });

  beforeAll(async () => {
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('ana');
    fake = startFakeOpenAI();
    const model = await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url });
    await createEndpoint(t, owner, { name: 'Bakery', slug: 'bakery', model_id: model.id, response_type: 'summary' });
    const garden = await createEndpoint(t, owner, { name: 'Garden', slug: 'garden', model_id: model.id, response_type: 'summary' });
    for (const question of [
      'How do I bake sourdough bread?',
      'Sourdough starter feeding schedule',
      'Which flour for sourdough?',
      'Rye bread with a sourdough starter',
      'Gluten free bread recipe',
    ]) {
      expect((await ask('bakery', question)).statusCode).toBe(200);
    }
    expect((await ask('garden', 'When to plant tomatoes?')).statusCode).toBe(200);
    // Two paid queries of a consumer, yesterday, on the garden endpoint.
    const tenant = await t.tenant(owner);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString();
    for (const transaction of ['0xa1', '0xa2']) {
      await t.services.database.db
        .insertInto('query_usage')
        .values({
          tenant_id: tenant.id,
          endpoint_id: garden.id,
          sender_email: 'gardener@example.com',
          dataset_cost: 0,
          model_cost: 0,
          total_cost: 0,
          tokens: 0,
          status: 'success',
          error: null,
          payment_rail: 'mpp',
          payment_amount: 0.05,
          payment_transaction: transaction,
          latency_ms: 40,
          created_at: yesterday,
        })
        .execute();
    }
    // The analytics count up to now, exclusive: the app's clock, which stands still, moves a millisecond on so
    // that the queries just recorded lie before it, as they do on a clock that runs.
    t.clock.advance(1);
    ({ url, browser, page } = await openConsoleSession(t, owner));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await fake?.close();
    await t?.close();
  });

  test('reached by keyboard: cards, charts, top users and the word cloud; filtered to one endpoint', async () => {
    const problems = watch(page);
    await visit(page, `${url}/`);
    await press(page, { text: 'Analytics' });
    await waitForPath(page, '/analytics');
    await waitForText(page, '[data-stat="queries"] dd', '8');
    expect(await textOf(page, '[data-stat="users"] dd')).toEqual(['2']);
    expect(await textOf(page, '[data-stat="revenue"] dd')).toEqual(['0.1 USD']);
    await waitForText(page, '.word-cloud', 'sourdough');
    const cloud = await page.$$eval('.word-cloud li', (items) =>
      items.map((item) => ({ term: item.getAttribute('data-term'), size: Number.parseFloat(getComputedStyle(item).fontSize) })),
    );
    const size = (term: string) => cloud.find((entry) => entry.term === term)?.size ?? 0;
    expect(size('sourdough')).toBeGreaterThan(size('bread'));
    expect(size('bread')).toBeGreaterThan(size('tomatoes'));
    expect(cloud.map((entry) => entry.term)).not.toContain('how');
    expect(await page.$$('.chart canvas')).toHaveLength(3);
    expect(await textOf(page, '[data-analytics="top-users"] tbody td:first-child')).toEqual([owner.email, 'gardener@example.com']);
    expect(await unlabelledControls(page)).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, '30-analytics.png'), fullPage: true });

    // The garden endpoint alone, chosen by keyboard: the filter's options are every endpoint, then every dataset.
    await tabTo(page, { label: 'Endpoint or dataset' });
    await page.keyboard.press('ArrowDown'); // Bakery
    await page.keyboard.press('ArrowDown'); // Garden
    await waitForText(page, '[data-stat="queries"] dd', '3');
    await waitForText(page, '.word-cloud', 'tomatoes');
    expect(await textOf(page, '.word-cloud li')).not.toContain('sourdough');
    expect(problems).toEqual({ console: [], requests: [] });
  }, 60_000);

  test('usable at 390 px: nothing wider than the screen', async () => {
    await page.setViewport({ width: 390, height: 844 });
    await visit(page, `${url}/analytics`);
    await waitForText(page, '.word-cloud', 'sourdough');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(SCREENSHOTS, '31-analytics-390.png'), fullPage: true });
  }, 60_000);
});
