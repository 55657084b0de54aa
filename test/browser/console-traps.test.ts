/**
 * The console without traps (issue 24, item 5), in Chromium and by keyboard: an access list that would refuse the
 * owner is warned about and confirmed before it is saved, and the playground names the policy that refused; a wrong
 * rate is answered in plain words, with the focus on it; an unreachable model server is said to be one, beside the
 * control; the focus follows what replaced a pressed control ("Open" in the folder browser, "Load the list", "Type
 * a name") and goes to a form's first error, and the sticky header never hides it; the dataset form puts the name
 * first, lists its embedders and hides the compatibility ports; the threshold is explained where results are; the
 * endpoint form shows its answer length and "answer in full"; Overview ticks the question step; a dataset that has
 * seen nothing is not "done"; an endpoint's dataset, model and answer type are replaced with its policies and
 * publication; Settings shows one empty state and no card inside a card; and the console fits a 390 px screen.
 *
 * knode runs in this process (a loopback port), with the OpenAI-compatible test double as its model server and the
 * SyftHub double as its marketplace. Screenshots go to test-output/screenshots/ (SCREENSHOTS_DIR for another folder).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Dialog, Page } from 'puppeteer-core';
import { deadServerUrl, type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { createTestApp, type TestApp, type TestUser } from '../helpers/app.ts';
import { createEndpoint, createModel } from '../helpers/fixtures.ts';
import { openConsoleSession, SCREENSHOTS } from './console-session.ts';
import {
  type BrowserSession,
  type Problems,
  press,
  replaceInto,
  tabTo,
  textOf,
  typeInto,
  unlabelledControls,
  visit,
  waitForPath,
  waitForText,
} from './page.ts';

const HUB_PASSWORD = 'a hub password';

describe('the console without traps', () => {
  let hub: FakeSyftHub;
  let fake: FakeOpenAIServer;
  let t: TestApp;
  let owner: TestUser;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  let problems: Problems;
  let modelId: string;
  let datasetA: string;
  let datasetB: string;
  /** What the next confirm() answers, and the messages it showed. */
  let confirmAnswer = true;
  const dialogs: string[] = [];

  const api = async <T>(method: string, path: string, payload?: unknown): Promise<T> => {
    const response = await t.request({
      method: method as 'GET',
      url: `/api/v1${path}`,
      token: owner.token,
      ...(payload ? { payload } : {}),
    });
    if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${response.body}`);
    return (response.body ? response.json() : undefined) as T;
  };

  /** A screenshot: the whole page from its top (where the sticky header belongs), or what is on screen now. */
  async function shot(name: string, fullPage = true): Promise<void> {
    await page.evaluate(async (whole: boolean) => {
      if (whole) window.scrollTo(0, 0);
      await document.fonts.ready;
    }, fullPage);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage });
  }

  /** Forgets the failures a test caused on purpose (a refusal, a 422), which the browser also logs. */
  const forget = () => {
    problems.requests.length = 0;
    problems.console.length = 0;
  };

  /** The element that has the focus, as a few words a test can compare. */
  const focused = () =>
    page.evaluate(() => {
      const element = document.activeElement as HTMLElement | null;
      return {
        tag: element?.tagName.toLowerCase() ?? '',
        name: element?.getAttribute('name') ?? '',
        text: (element?.textContent ?? '').trim().slice(0, 200),
        classes: element?.className ?? '',
        invalid: element?.getAttribute('aria-invalid') === 'true',
      };
    });

  /** Whether the focused element is on screen and below the sticky header. */
  const focusInView = () =>
    page.evaluate(() => {
      const element = document.activeElement as HTMLElement | null;
      if (!element || element === document.body) return false;
      const box = element.getBoundingClientRect();
      const header = document.querySelector('.topbar')?.getBoundingClientRect();
      const headerBottom =
        header && getComputedStyle(document.querySelector('.topbar') as Element).position === 'sticky' ? header.bottom : 0;
      return box.top >= headerBottom - 1 && box.bottom <= window.innerHeight + 1;
    });

  beforeAll(async () => {
    hub = await startFakeSyftHub();
    hub.addUser({ username: 'ada', email: 'ada@hub.example', password: HUB_PASSWORD });
    fake = startFakeOpenAI({ models: ['fake-model', 'fake-model-large'] });
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true' });
    owner = await t.user('ada');
    // Two folders with a document each (the folder browser opens one), and a model on the test double.
    for (const name of ['harbour', 'glaciers']) {
      mkdirSync(join(t.dataDir, 'folders', name), { recursive: true });
      writeFileSync(join(t.dataDir, 'folders', name, `${name}.txt`), `Notes about the ${name}.\n`);
    }
    datasetA = (
      await api<{ id: string }>('POST', '/datasets/', {
        name: 'harbour',
        dtype: 'local_file',
        configuration: { ingestionPath: join(t.dataDir, 'folders', 'harbour'), embedder: 'openai:fake-embedder', base_url: fake.url },
      })
    ).id;
    datasetB = (
      await api<{ id: string }>('POST', '/datasets/', {
        name: 'glaciers',
        dtype: 'local_file',
        configuration: { ingestionPath: join(t.dataDir, 'folders', 'glaciers'), embedder: 'openai:fake-embedder', base_url: fake.url },
      })
    ).id;
    modelId = (await createModel(t, owner, 'fake', { model: 'fake-model', base_url: fake.url })).id;
    ({ url, browser, page, problems } = await openConsoleSession(t, owner));
    page.on('dialog', (dialog: Dialog) => {
      dialogs.push(dialog.message());
      void (confirmAnswer ? dialog.accept() : dialog.dismiss());
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await hub?.close();
    await fake?.close();
  });

  test('an access list that refuses the owner is warned about and confirmed; the playground names the policy that refused', async () => {
    await createEndpoint(t, owner, { name: 'Answers', slug: 'answers', model_id: modelId, response_type: 'summary' });
    await visit(page, `${url}/endpoints/answers/policies`);
    await typeInto(page, { label: 'Policy name' }, 'colleagues');
    await typeInto(page, { label: 'Patterns' }, 'bob@example.org');
    await waitForText(page, '[data-owner-warning]', 'This list refuses you. ada@example.com matches no pattern');
    await shot('20-owner-warning');
    // Saving asks first: declined, nothing is saved; accepted, the list is saved as it is.
    confirmAnswer = false;
    await press(page, { text: 'Add the policy' });
    await page.waitForFunction(() => !document.querySelector('button[type="submit"]')?.hasAttribute('disabled'));
    expect(dialogs.at(-1)).toContain('This list refuses you (ada@example.com)');
    expect((await api<{ policies: unknown[] }>('GET', '/endpoints/answers')).policies).toHaveLength(0);
    confirmAnswer = true;
    await press(page, { text: 'Add the policy' });
    await waitForText(page, '.policy', 'colleagues');
    expect(dialogs).toHaveLength(2);

    // The owner's question is refused, and the playground names the policy.
    await press(page, { text: 'Playground', selector: '.tabs a' });
    await typeInto(page, { label: 'Your question' }, 'Who may ask?');
    await page.keyboard.press('Enter');
    await waitForText(page, '[data-refused-by]', "Refused by the access policy 'colleagues'.");
    await shot('21-refused-by');
    forget(); // the 403 is the point
  }, 60_000);

  test('a wrong rate is answered in plain words, and the focus goes to it', async () => {
    const refused = await t.request({
      method: 'POST',
      url: '/api/v1/policies/',
      token: owner.token,
      payload: {
        name: 'r',
        policy_type: 'rate_limit',
        endpoint_id: (await api<{ id: string }>('GET', '/endpoints/answers')).id,
        configuration: { rate: '10 a minute' },
      },
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().detail).toEqual([
      {
        loc: ['body', 'configuration', 'rate'],
        msg: 'Write a number and a period: 10/m (per minute), 100/h, 5/s or 1000/d',
        type: 'string_pattern_mismatch',
      },
    ]);
    await visit(page, `${url}/endpoints/answers/policies`);
    // The type is a group of radio buttons: Tab reaches the chosen one, the arrow keys move the choice.
    await tabTo(page, { selector: 'input[name="policy_type"]' });
    await page.keyboard.press('ArrowDown');
    expect(await page.$eval('input[name="policy_type"]:checked', (input) => (input as HTMLInputElement).value)).toBe('rate_limit');
    await typeInto(page, { label: 'Rate' }, '10 a minute');
    await page.keyboard.press('Enter');
    await waitForText(page, '.field-invalid .error-text', 'Write a number and a period: 10/m (per minute), 100/h, 5/s or 1000/d');
    await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'rate');
    expect(await focused()).toMatchObject({ tag: 'input', name: 'rate', invalid: true });
    expect(await focusInView()).toBe(true);
    await shot('22-rate-in-words', false);
    forget(); // the 422s are the point
  }, 60_000);

  test('an unreachable model server is said so; the list or the text box takes the focus of the button it replaced', async () => {
    await visit(page, `${url}/models/new`);
    const dead = await deadServerUrl();
    await typeInto(page, { label: 'Base URL' }, dead);
    await waitForText(page, '.field-invalid .error-text', `knode cannot get the list of models from ${dead}`);
    expect(await textOf(page, '.hint')).not.toContain("type the model's name");
    await shot('23-model-unreachable');
    // The right address: the list comes; "Type a name" gives a text box, focused; "Load the list" the list, focused.
    await replaceInto(page, { label: 'Base URL' }, fake.url);
    await page.waitForSelector('select[name="model"] option[value="fake-model-large"]');
    await press(page, { text: 'Type a name' });
    await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'model');
    expect(await focused()).toMatchObject({ tag: 'input', name: 'model' });
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter'); // "Load the list", the next control
    await page.waitForFunction(() => document.activeElement?.matches('select[name="model"]'));
    expect(await focused()).toMatchObject({ tag: 'select', name: 'model' });
  }, 60_000);

  test('the dataset form: the name first, a list of embedders, no ports, no raw Markdown; "Open" moves the focus to the folder opened', async () => {
    await visit(page, `${url}/datasets/new`);
    const order = await page.$$eval('form label', (labels) => labels.map((label) => (label.textContent ?? '').trim()));
    // The type comes first because it decides the rest of the form (a folder or feeds); then the required name.
    expect(order.slice(0, 2).map((label) => label.split(/\s/)[0])).toEqual(['Type', 'Name']);
    expect(order.findIndex((label) => label.startsWith('Summary'))).toBeLessThan(
      order.findIndex((label) => label.startsWith('Chunk size')),
    );
    expect(order.some((label) => /port/i.test(label))).toBe(false);
    expect(await page.$eval('form', (form) => form.textContent ?? '')).not.toContain('`');
    expect(
      await page.$$eval('select[name="embedder"] option', (options) => options.map((option) => (option as HTMLOptionElement).value)),
    ).toEqual(['', 'use-lite', 'use-lite-int8', 'transformers:Xenova/all-MiniLM-L6-v2', 'openai:text-embedding-3-small']);
    // The folder browser: "Open" replaces the list, and the focus goes to the folder's name.
    await press(page, { selector: '.browser-open' });
    await page.waitForFunction(() => document.activeElement?.classList.contains('browser-path'));
    expect((await focused()).text).toBe(t.dataDir);
    await page.keyboard.press('Tab');
    expect((await focused()).text).toStartWith('↑ Up');
    await press(page, { label: 'Open folders' });
    await page.waitForFunction(() => (document.activeElement?.textContent ?? '').endsWith('/folders'));
    expect((await focused()).classes).toBe('browser-path');
    await press(page, { label: 'Open harbour' });
    await page.waitForFunction(() => (document.activeElement?.textContent ?? '').endsWith('/folders/harbour'));
    expect((await focused()).classes).toBe('browser-path');
    // An openai: embedder brings its server's fields.
    expect(await page.$('input[name="base_url"]')).toBeNull();
    await press(page, { text: 'More settings', selector: 'summary' });
    await tabTo(page, { label: 'Embedder' });
    for (let option = 0; option < 4; option++) await page.keyboard.press('ArrowDown');
    expect(await page.$eval('select[name="embedder"]', (select) => (select as HTMLSelectElement).value)).toBe(
      'openai:text-embedding-3-small',
    );
    await page.waitForSelector('input[name="base_url"]');
    await shot('24-dataset-form');
  }, 60_000);

  test('the threshold is explained beside the playground and the dataset search; a dataset that saw nothing is not "done"', async () => {
    await createEndpoint(t, owner, { name: 'Search', slug: 'search', dataset_id: datasetA, response_type: 'raw' });
    await visit(page, `${url}/endpoints/search`);
    await waitForText(page, '[data-threshold-note]', 'Only passages scoring 0.5 or more are used');
    await visit(page, `${url}/datasets/${datasetB}`);
    await waitForText(page, '[data-threshold-note]', 'Threshold 0: every result is shown');
    // An empty folder: nothing was to do, so nothing is "done".
    mkdirSync(join(t.dataDir, 'folders', 'empty'), { recursive: true });
    const empty = await api<{ id: string }>('POST', '/datasets/', {
      name: 'empty',
      dtype: 'local_file',
      configuration: { ingestionPath: join(t.dataDir, 'folders', 'empty'), embedder: 'openai:fake-embedder', base_url: fake.url },
    });
    await visit(page, `${url}/datasets/${empty.id}`);
    await page.waitForSelector('[data-stat="left"] dd');
    expect((await textOf(page, '[data-stat="left"] dd'))[0]).not.toBe('done');
  }, 60_000);

  test('the endpoint form shows the answer length and "answer in full", and sends them', async () => {
    await visit(page, `${url}/endpoints/new`);
    await typeInto(page, { label: 'Name' }, 'Full answers');
    expect(await page.$eval('[data-generation-defaults] input[type="number"]', (input) => (input as HTMLInputElement).value)).toBe('1024');
    expect(await page.$eval('[data-generation-defaults] input[type="checkbox"]', (input) => (input as HTMLInputElement).checked)).toBe(
      true,
    );
    await shot('25-endpoint-generation');
    await press(page, { text: 'Create the endpoint' });
    await waitForPath(page, '/endpoints/full-answers');
    expect((await api<{ generation_defaults: unknown }>('GET', '/endpoints/full-answers')).generation_defaults).toEqual({
      max_tokens: 1024,
      stop_sequences: [],
    });
    // Asked once: Overview ticks its fourth step.
    await typeInto(page, { label: 'Your question' }, 'What is in the harbour notes?');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.meta');
    await visit(page, `${url}/`);
    await waitForText(page, '.step.done h2', 'Ask it a question');
    await shot('26-overview-asked');
  }, 60_000);

  test("an endpoint's dataset, model or answer type is replaced with its policies and publication", async () => {
    await api('POST', '/marketplaces/', { name: 'SyftHub', url: hub.url, username: 'ada', password: HUB_PASSWORD });
    const marketplace = (await api<{ id: string }[]>('GET', '/marketplaces/'))[0]?.id as string;
    const before = await api<{ id: string }>('POST', '/endpoints/', {
      name: 'Harbour answers',
      slug: 'harbour-answers',
      summary: 'What the harbour notes say.',
      dataset_id: datasetA,
      model_id: modelId,
      response_type: 'both',
      generation_defaults: { max_tokens: 512, stop_sequences: [] },
    });
    await api('POST', '/policies/', {
      name: 'everyone here',
      policy_type: 'access',
      endpoint_id: before.id,
      configuration: { mode: 'allow', patterns: ['.*@example\\.com'] },
    });
    await api('POST', '/policies/', {
      name: 'ten a minute',
      policy_type: 'rate_limit',
      endpoint_id: before.id,
      configuration: { rate: '10/m' },
    });
    await api('POST', '/endpoints/harbour-answers/publish', { marketplace_ids: [marketplace] });
    expect(hub.endpointsOf('ada').has('harbour-answers')).toBe(true);

    await visit(page, `${url}/endpoints/harbour-answers/settings`);
    await press(page, { text: 'Replace the dataset, model or answer type' });
    await page.waitForSelector('[data-replace]');
    await page.waitForFunction(() => document.activeElement?.id === 'replace-title');
    await waitForText(page, '[data-replace] .notice-warning', 'usage history is deleted with the old one');
    await tabTo(page, { label: 'Dataset', selector: '[data-replace] select' });
    // The options: None, harbour, glaciers (and the empty one): the arrow moves to the next.
    await page.keyboard.press('ArrowDown');
    expect(await page.$eval('[data-replace] select', (select) => (select as HTMLSelectElement).selectedOptions[0]?.textContent)).toBe(
      'glaciers',
    );
    await shot('27-replace');
    await press(page, { text: 'Replace the endpoint' });
    await waitForText(page, '[data-replace] .notice-success', 'Published again on SyftHub.');
    expect(dialogs.at(-1)).toContain('its usage history is deleted with it');

    const after = await api<{
      id: string;
      name: string;
      summary: string;
      response_type: string;
      dataset: { id: string };
      model: { id: string };
      generation_defaults: unknown;
      policies: { name: string; policy_type: string; configuration: unknown }[];
      published_to: string[];
    }>('GET', '/endpoints/harbour-answers');
    expect(after.id).not.toBe(before.id);
    expect(after).toMatchObject({
      name: 'Harbour answers',
      summary: 'What the harbour notes say.',
      response_type: 'both',
      dataset: { id: datasetB },
      model: { id: modelId },
      generation_defaults: { max_tokens: 512, stop_sequences: [] },
      published_to: [marketplace],
    });
    expect(after.policies.map((policy) => [policy.name, policy.policy_type, policy.configuration]).sort()).toEqual([
      ['everyone here', 'access', { mode: 'allow', patterns: ['.*@example\\.com'] }],
      ['ten a minute', 'rate_limit', { rate: '10/m' }],
    ]);
    expect(hub.endpointsOf('ada').has('harbour-answers')).toBe(true);
    await waitForText(page, '.subtitle', 'searches glaciers');
    await shot('28-replaced');
  }, 90_000);

  test('Settings: one empty state, no card inside a card, an error in view with the focus on it', async () => {
    const grace = await t.user('grace');
    await page.evaluate((token: string) => localStorage.setItem('knode.token', token), grace.token);
    try {
      await settingsAsNewcomer();
    } finally {
      await page.evaluate((token: string) => localStorage.setItem('knode.token', token), owner.token);
    }
  }, 60_000);

  async function settingsAsNewcomer(): Promise<void> {
    await visit(page, `${url}/settings`);
    await waitForText(page, '[data-connect="about"]', 'SyftHub is the marketplace');
    const text = await page.$eval('#main', (main) => main.textContent ?? '');
    expect(text.match(/No marketplace yet/g)).toHaveLength(1);
    expect(text).not.toContain('connect one above');
    expect(await page.$$('.card .card')).toHaveLength(0);
    await shot('29-settings-empty');
    // A refused password: the hub's reason, scrolled into view and focused.
    await replaceInto(page, { label: 'Marketplace URL' }, hub.url);
    await typeInto(page, { label: 'User name' }, 'grace');
    await typeInto(page, { label: 'Password' }, 'not the password');
    await page.keyboard.press('Enter');
    await page.waitForSelector('form[aria-labelledby="connect-title"] .notice-error');
    await page.waitForFunction(() => document.activeElement?.classList.contains('notice-error'));
    expect(await focusInView()).toBe(true);
    await shot('29-settings-error', false);
    // A public URL that is not http(s): the 422 in words, beside the field, with the focus on it.
    await typeInto(page, { label: 'Public URL' }, 'ftp://knode.example.net');
    await page.keyboard.press('Enter');
    await waitForText(page, '.field-invalid .error-text', 'Write an http or https URL with a host, e.g. https://knode.example.net');
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-invalid') === 'true');
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).value)).toBe('ftp://knode.example.net');
    expect(await focusInView()).toBe(true);
    forget(); // the hub's refusal and the 422 are the point
  }

  test('the sticky header never hides the focused control, going up with Shift+Tab', async () => {
    await visit(page, `${url}/endpoints/answers/policies`);
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await page.focus('button[type="submit"]');
    for (let step = 0; step < 25; step++) {
      await page.keyboard.down('Shift');
      await page.keyboard.press('Tab');
      await page.keyboard.up('Shift');
      const inHeader = await page.evaluate(() => Boolean(document.activeElement?.closest('.topbar')));
      if (inHeader) break;
      expect({ step, inView: await focusInView() }).toEqual({ step, inView: true });
    }
  }, 60_000);

  test('at 390 px wide: no page scrolls sideways', async () => {
    await page.setViewport({ width: 390, height: 844 });
    const pages = [
      ['/', '30-phone-overview'],
      ['/datasets', undefined],
      [`/datasets/${datasetA}`, '31-phone-dataset'],
      ['/datasets/new', undefined],
      ['/models', undefined],
      ['/models/new', undefined],
      ['/endpoints', undefined],
      ['/endpoints/answers', '32-phone-playground'],
      ['/endpoints/answers/policies', '33-phone-policies'],
      ['/endpoints/answers/settings', undefined],
      ['/endpoints/answers/publish', undefined],
      ['/endpoints/answers/usage', undefined],
      ['/settings', '34-phone-settings'],
    ] as const;
    const wide: string[] = [];
    for (const [path, name] of pages) {
      await visit(page, `${url}${path}`);
      await page.waitForSelector('#main h1');
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      if (width > 390) wide.push(`${path}: ${width}px`);
      if (name) await shot(name, false);
    }
    expect(wide).toEqual([]);
    expect(await unlabelledControls(page)).toEqual([]);
    await page.setViewport({ width: 1280, height: 860 });
    expect(problems).toEqual({ console: [], requests: [] });
  }, 120_000);
});
