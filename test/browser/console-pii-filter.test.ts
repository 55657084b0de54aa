/**
 * The PII filter in the console (issue 27, item 4), in Chromium and by keyboard alone: the policy page offers the
 * `pii_filter` type that `GET /api/v1/types` lists, its form built from the type's schema (the instructions a text
 * box under "More settings"); it is saved, edited and saved again; the playground's answer comes back filtered; and
 * on an endpoint that only searches, the server's refusal is shown in the form.
 *
 * knode runs in this process (a loopback port), with the OpenAI-compatible test double as its model server: it
 * answers questions with personal data, and the filter's call as a model that follows the filter's instructions.
 * Screenshots go where the other browser tests' go (test-output/screenshots/, or SCREENSHOTS_DIR).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { PII_SYSTEM_PROMPT } from '../../src/policies/pii-filter-hook.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';
import { openConsoleSession, SCREENSHOTS } from './console-session.ts';
import { type BrowserSession, type Problems, press, replaceInto, tabTo, typeInto, unlabelledControls, visit, waitForText } from './page.ts';

const ANSWER = 'Ada Lovelace answers at ada@example.org.';
const FILTERED = '[REDACTED] answers at [REDACTED].';

interface PolicyView {
  name: string;
  policy_type: string;
  configuration: Record<string, unknown>;
}

describe('the PII filter in the console', () => {
  let fake: FakeOpenAIServer;
  let t: TestApp;
  let owner: TestUser;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  let problems: Problems;

  const policiesOf = async (slug: string): Promise<PolicyView[]> =>
    (await t.request({ method: 'GET', url: `/api/v1/endpoints/${slug}`, token: owner.token })).json().policies;

  /** Chooses a type in the "Add a policy" radio group: Tab reaches the chosen one, the arrow keys move the choice. */
  async function chooseType(type: string): Promise<void> {
    await tabTo(page, { selector: 'input[name="policy_type"]' });
    for (let presses = 0; presses < 10; presses++) {
      const chosen = await page.$eval('input[name="policy_type"]:checked', (input) => (input as HTMLInputElement).value);
      if (chosen === type) return;
      await page.keyboard.press('ArrowDown');
    }
    throw new Error(`the type ${type} is not offered`);
  }

  beforeAll(async () => {
    fake = startFakeOpenAI({ answer: ANSWER });
    // The filter's call carries the filter's instructions: the double answers it as a model that follows them.
    fake.behave({
      reply: (messages) =>
        messages[0]?.content.startsWith(PII_SYSTEM_PROMPT)
          ? (messages[1]?.content ?? '')
              .replace(/^[^\n]*\n\n/, '')
              .replace('Ada Lovelace', '[REDACTED]')
              .replace(/[\w.]+@[\w.]+\w/, '[REDACTED]')
          : undefined,
    });
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('ada');
    const modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url })).id;
    await createEndpoint(t, owner, { name: 'Answers', slug: 'answers', model_id: modelId, response_type: 'summary' });
    mkdirSync(join(t.dataDir, 'folders', 'notes'), { recursive: true });
    writeFileSync(join(t.dataDir, 'folders', 'notes', 'notes.txt'), 'Notes.\n');
    const dataset = await t.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: owner.token,
      payload: { name: 'notes', dtype: 'local_file', configuration: { ingestionPath: join(t.dataDir, 'folders', 'notes') } },
    });
    await createEndpoint(t, owner, { name: 'Search', slug: 'search', dataset_id: dataset.json().id, response_type: 'raw' });
    ({ url, browser, page, problems } = await openConsoleSession(t, owner));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await fake?.close();
  });

  test('the type is offered, its form built from its schema, and it is saved and edited', async () => {
    await visit(page, `${url}/endpoints/answers/policies`);
    await chooseType('pii_filter');
    await waitForText(page, '.choice.chosen', "The endpoint's own model replaces personal data in each answer with [REDACTED]");
    await typeInto(page, { label: 'Policy name' }, 'no personal data');
    // The instructions are optional: under "More settings", opened from the keyboard, a text box.
    await press(page, { selector: 'details.more > summary' });
    await typeInto(page, { label: 'Instructions' }, 'Also replace customer numbers.');
    expect(await page.$eval('textarea[name="instructions"]', (box) => (box as HTMLTextAreaElement).value)).toBe(
      'Also replace customer numbers.',
    );
    expect(await page.$eval('textarea[name="instructions"]', (box) => box.getAttribute('aria-describedby') ?? '')).not.toBe('');
    expect(await unlabelledControls(page)).toEqual([]);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SCREENSHOTS, '40-pii-filter-form.png'), fullPage: true });
    await press(page, { text: 'Add the policy' });
    await waitForText(page, '.policy', 'no personal data');
    await waitForText(page, '.policy', 'PII filter');
    expect(await policiesOf('answers')).toEqual([
      expect.objectContaining({
        name: 'no personal data',
        policy_type: 'pii_filter',
        configuration: { instructions: 'Also replace customer numbers.' },
      }),
    ]);

    // Edited: the form opens with what is saved, and saves what is typed over it.
    await press(page, { text: 'Edit no personal data' });
    await press(page, { selector: '.policy details.more > summary' });
    await replaceInto(page, { label: 'Instructions' }, 'Also replace order numbers.');
    await press(page, { text: 'Save' });
    await waitForText(page, '.policy', 'Also replace order numbers.');
    expect((await policiesOf('answers'))[0]?.configuration).toEqual({ instructions: 'Also replace order numbers.' });
    expect(problems).toEqual({ console: [], requests: [] });
  }, 60_000);

  test("the playground's answer comes back filtered", async () => {
    await visit(page, `${url}/endpoints/answers`);
    await typeInto(page, { label: 'Your question' }, 'Who answers?');
    await page.keyboard.press('Enter');
    await waitForText(page, '.answer-text', FILTERED);
    expect(await page.$eval('.conversation', (list) => list.textContent ?? '')).not.toContain('ada@example.org');
    expect(problems).toEqual({ console: [], requests: [] });
  }, 60_000);

  test('on an endpoint that only searches, the refusal is shown in the form and nothing is saved', async () => {
    await visit(page, `${url}/endpoints/search/policies`);
    await chooseType('pii_filter');
    await press(page, { text: 'Add the policy' });
    await waitForText(page, '.policy-form .notice-error', 'A PII filter needs an endpoint that answers with a model');
    expect(await policiesOf('search')).toEqual([]);
    // The 422 is the point.
    expect(problems.requests.every((request) => request.startsWith('POST') && request.endsWith(': 422'))).toBe(true);
    problems.requests.length = 0;
    problems.console.length = 0;
  }, 60_000);
});
