/**
 * The console in a real browser: Debian's Chromium (`apt-get install -y chromium`; KNODE_CHROMIUM names
 * another binary) driven by puppeteer-core, against a real knode started from source on a free loopback
 * port with its own data folder and ingestion root, and the OpenAI test double as the model.
 *
 * The main flow is driven by the keyboard alone (Tab to a control, type, Enter or Space): first run →
 * owner account → a folder dataset, indexed until searchable → search in each mode → an OpenAI-compatible
 * model picked from the server's list → an endpoint → a streamed answer with its references in the
 * playground → an access policy whose live check refuses an e-mail. Then a refused token brings the login
 * page back. On every page: no console error, no failed request, every form control labelled. Screenshots
 * of the main pages go to test-output/screenshots/ (ignored by git; `npm run screenshots` writes the README's
 * gallery in docs/screenshots/ instead).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'puppeteer-core';
import { FAKE_ANSWER, type FakeOpenAIServer, startFakeOpenAI } from '../fakes/openai-server.ts';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { buildPdf } from '../fixtures/make-documents.ts';
import { type KnodeProcess, startKnodeProcess } from '../helpers/knode-process.ts';
import {
  type BrowserSession,
  CHROMIUM,
  clickButton,
  openBrowser,
  type Problems,
  press,
  reload,
  replaceInto,
  tabTo,
  textOf,
  typeInto,
  unlabelledControls,
  visit,
  waitForPath,
  waitForText,
  watch,
} from './page.ts';

const SCREENSHOTS = resolve(import.meta.dir, '../..', process.env.SCREENSHOTS_DIR ?? 'test-output/screenshots');
const OWNER = { email: 'ada@example.com', password: 'a long password' };
const HUB_PASSWORD = 'a hub password';
/**
 * What the issue asks of the console's initial load (a size: deterministic, so a test checks it). Its first
 * render (under 300 ms) is a time: measured by scripts/bench/console.ts, never asserted here (shared machines).
 */
const MAX_INITIAL_JS_BYTES = 250_000;
const LIBRARY_FILES = 600;
const LIBRARY_TEXT = [
  'The tide tables of the northern coast change with the moon.',
  'Bees dance to tell the hive where the clover grows.',
  'A sextant measures the angle between the sun and the horizon.',
  'Copper roofs turn green as the metal slowly oxidises.',
];

describe('the console in a browser', () => {
  let fake: FakeOpenAIServer;
  let hub: FakeSyftHub;
  let scratch: string;
  let root: string;
  let documents: string;
  let library: string;
  let knode: KnodeProcess;
  let browser: BrowserSession;
  let page: Page;
  let problems: Problems;
  const measured: Record<string, number> = {};
  /** Problems seen on each page, checked once per page. */
  const checked: { page: string; unlabelled: string[]; problems: string[] }[] = [];

  /** Checks the page as it is now (labels, console, requests) and saves its screenshot. */
  async function checkpoint(name: string, options: { fullPage?: boolean } = {}): Promise<void> {
    // From the top, so that the sticky header is where it belongs in a full-page picture.
    await page.evaluate(async () => {
      window.scrollTo(0, 0);
      await document.fonts.ready;
    });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: options.fullPage ?? true });
    checked.push({
      page: name,
      unlabelled: await unlabelledControls(page),
      problems: [...problems.console, ...problems.requests],
    });
    problems.console.length = 0;
    problems.requests.length = 0;
  }

  /** The time from navigation start to the console's first real content, and to the first paint. */
  async function renderTimes(): Promise<{ firstRender: number; firstContentfulPaint: number }> {
    await page.waitForFunction(() => performance.getEntriesByName('knode:first-render').length > 0, { timeout: 10_000 });
    return page.evaluate(() => ({
      firstRender: performance.getEntriesByName('knode:first-render')[0]?.startTime ?? Number.NaN,
      firstContentfulPaint: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
    }));
  }

  let phase = 'starting';
  /**
   * Runs a test; a failure names the phase it happened in and the page's address, and leaves a screenshot
   * of the page in the temporary folder.
   */
  function diagnosed(body: () => Promise<void>): () => Promise<void> {
    return async () => {
      try {
        await body();
      } catch (error) {
        const picture = join(tmpdir(), `knode-console-failure-${Date.now()}.png`);
        await page?.screenshot({ path: picture, fullPage: true }).catch(() => undefined);
        const url = page?.url();
        (error as Error).message = `${phase} (at ${url}, screenshot ${picture}): ${(error as Error).message}`;
        throw error;
      }
    };
  }

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`No Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set KNODE_CHROMIUM`);
    }
    mkdirSync(SCREENSHOTS, { recursive: true });
    // Slow enough that the stream is seen growing, token by token.
    fake = startFakeOpenAI({ models: ['fake-model', 'fake-model-large'] });
    hub = await startFakeSyftHub();
    hub.addUser({ username: 'ada', email: 'ada@hub.example', password: HUB_PASSWORD });
    fake.behave({ chunkDelayMs: 40 });
    scratch = mkdtempSync(join(tmpdir(), 'knode-console-'));
    // The ingestion root holds two folders: the documents of the main flow, and a library of many small files.
    root = join(scratch, 'files');
    documents = join(root, 'documents');
    library = join(root, 'library');
    mkdirSync(library, { recursive: true });
    for (let index = 0; index < LIBRARY_FILES; index++) {
      // About one full chunk each (900 characters), so that indexing lasts long enough to measure its rate.
      const text = Array.from({ length: 16 }, (_, line) => LIBRARY_TEXT[(index + line) % LIBRARY_TEXT.length]).join(' ');
      writeFileSync(join(library, `note-${String(index).padStart(3, '0')}.txt`), `Note ${index}. ${text.slice(0, 900)}\n`);
    }
    mkdirSync(join(documents, 'papers'), { recursive: true });
    mkdirSync(join(documents, 'notes'), { recursive: true });
    writeFileSync(
      join(documents, 'papers', 'harbour.pdf'),
      buildPdf([['The lighthouse keeper records every storm that reaches the harbour.']], { title: 'Harbour log' }),
    );
    writeFileSync(join(documents, 'notes', 'glaciers.md'), '# Glaciers\n\nGlaciers carve deep valleys over thousands of winters.\n');
    writeFileSync(join(documents, 'notes', 'sourdough.txt'), 'Knead the sourdough gently before the oven is hot.\n');
    writeFileSync(
      join(documents, 'garden.html'),
      '<html><head><title>Garden</title></head><body><p>Tomatoes ripen slowly beside the greenhouse wall.</p></body></html>',
    );
    writeFileSync(join(documents, 'papers', 'damaged.pdf'), 'this is not a PDF at all');
    knode = await startKnodeProcess({
      HOME: scratch,
      SVC_DATA_DIR: join(scratch, 'data'),
      SVC_INGESTION_ROOTS: root,
      // The test does in one minute what a person does in ten: the general limit (100 a minute per tenant)
      // would count its own requests against it, which no person at the console comes near.
      SVC_RATE_LIMIT_PER_MINUTE: '1000',
    });
    ({ browser, page } = await openBrowser());
    problems = watch(page);
  });

  afterAll(async () => {
    await browser?.close();
    await knode?.stop();
    await fake?.close();
    await hub?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test(
    'a new owner goes from an empty knode to a streamed answer from their folder, by keyboard alone',
    diagnosed(async () => {
      // First run: no user yet, so the console offers the owner's account.
      phase = 'First run';
      await visit(page, `${knode.url}/`);
      await waitForPath(page, '/setup');
      const setupTimes = await renderTimes();
      measured.setup_first_render_ms = setupTimes.firstRender;
      measured.setup_first_contentful_paint_ms = setupTimes.firstContentfulPaint;
      measured.initial_js_encoded_bytes = await page.evaluate(() =>
        (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
          .filter((entry) => entry.initiatorType === 'script' || entry.name.endsWith('.js'))
          .reduce((sum, entry) => sum + entry.encodedBodySize, 0),
      );
      await checkpoint('01-first-run');

      await typeInto(page, { label: 'E-mail' }, OWNER.email);
      await typeInto(page, { label: 'Password (required)', selector: 'input[autocomplete="new-password"]' }, OWNER.password);
      await typeInto(page, { label: 'Password again' }, OWNER.password);
      expect(await page.$eval('input[pattern]', (input) => (input as HTMLInputElement).value)).toBe('ada');
      await press(page, { text: 'Create the owner account' });
      await waitForPath(page, '/');
      await waitForText(page, 'h1', 'Overview');
      await checkpoint('02-overview');

      // A folder: browsed inside the ingestion root, chosen with the keyboard.
      phase = 'A folder';
      await press(page, { text: 'Add a folder' });
      await waitForPath(page, '/datasets/new');
      await waitForText(page, '.browser-list', realpathSync(root));
      await press(page, { text: `Open ${realpathSync(root)}` });
      await waitForText(page, '.browser-list', 'library');
      await press(page, { text: 'Open documents' });
      await waitForText(page, '.browser-list', 'papers');
      await checkpoint('03-dataset-new');
      await press(page, { selector: '.browser-foot button' });
      expect(await page.$eval('input[name="ingestionPath"]', (input) => (input as HTMLInputElement).value)).toEndWith('/documents');
      expect(await page.$eval('form input[maxlength="200"]', (input) => (input as HTMLInputElement).value)).toBe('documents');
      await press(page, { text: 'Add the dataset' });
      await waitForPath(page, /^\/datasets\/[0-9a-f-]{36}$/);

      // Live progress until the four documents are searchable; the damaged PDF fails with its reason.
      phase = 'Live progress until the four documents are searchable; the damaged PDF fails with its reason';
      await waitForText(page, '.stats', 'of 5 files');
      await page.waitForFunction(
        () => {
          const stat = (name: string) => document.querySelector(`[data-stat="${name}"] dd`)?.textContent ?? '';
          return stat('indexed').startsWith('4 ') && stat('pending') === '0' && stat('failed') === '1';
        },
        { timeout: 120_000, polling: 250 },
      );
      await waitForText(page, '.files', 'damaged.pdf');
      await waitForText(page, '.row-bad .error-text', '');
      const failure = await textOf(page, '.row-bad .error-text');
      expect(failure.join(' ').length).toBeGreaterThan(5);

      // Search, in each mode: results carry a score, their file and page.
      phase = 'Search';
      await typeInto(page, { label: 'Search the dataset' }, 'lighthouse keeper storm');
      await page.keyboard.press('Enter');
      await waitForText(page, '.search-results .ref-source', 'papers/harbour.pdf, page 1');
      expect((await textOf(page, '.search-results .ref-score'))[0]).toMatch(/score \d\.\d{3}/);
      await checkpoint('04-dataset');
      for (const mode of ['keyword', 'vector']) {
        // The arrow keys move a focused list to its next option (hybrid, keyword, vector).
        await tabTo(page, { label: 'Mode' });
        await page.keyboard.press('ArrowDown');
        expect(await page.$eval('.search-form select', (select) => (select as HTMLSelectElement).value)).toBe(mode);
        await press(page, { text: 'Search', selector: '.search-form button' });
        await waitForText(page, '.search-results .hint', `in ${mode} mode`);
        if (mode === 'keyword') expect((await textOf(page, '.search-results .ref-source'))[0]).toBe('papers/harbour.pdf, page 1');
      }

      // A model: the OpenAI-compatible test double; its model comes from the list the server gives.
      phase = 'A model';
      await press(page, { text: 'Models', selector: 'nav a' });
      await waitForPath(page, '/models');
      await press(page, { text: 'Add a model', selector: 'a.button' });
      await waitForPath(page, '/models/new');
      await typeInto(page, { label: 'Base URL' }, fake.url);
      await typeInto(page, { label: 'API key' }, 'sk-test-key-for-the-double');
      await page.waitForSelector('select[name="model"] option[value="fake-model-large"]');
      await checkpoint('05-model-new');
      await press(page, { text: 'Add the model' });
      await waitForPath(page, /^\/models\/[0-9a-f-]{36}$/);
      await waitForText(page, '.badge', 'healthy');
      await press(page, { text: 'Run the prompt' });
      await waitForText(page, '.answer-text', 'The fake model answers');
      await checkpoint('06-model');
      await press(page, { text: 'Edit', selector: 'button' });
      await typeInto(page, { label: 'Name' }, 'Fake model'); // the field's text is selected as it takes the focus
      await press(page, { text: 'Save', selector: '.form-actions button' });
      await waitForText(page, 'h1', 'Fake model');

      // An endpoint on the dataset and the model.
      phase = 'An endpoint on the dataset and the model';
      await press(page, { text: 'Endpoints', selector: 'nav a' });
      await press(page, { text: 'Make an endpoint', selector: 'a.button' });
      await waitForPath(page, '/endpoints/new');
      await typeInto(page, { label: 'Name' }, 'My documents');
      expect(await page.$eval('input[minlength="3"]', (input) => (input as HTMLInputElement).value)).toBe('my-documents');
      await checkpoint('07-endpoint-new');
      await press(page, { text: 'Create the endpoint' });
      await waitForPath(page, '/endpoints/my-documents');

      // The playground: the answer streams in, token by token, after its references.
      phase = 'The playground';
      await page.evaluate(() => {
        const seen: string[] = [];
        (window as unknown as { streamed: string[] }).streamed = seen;
        setInterval(() => {
          const text = document.querySelector('.answer-text')?.textContent ?? '';
          if (text !== seen.at(-1)) seen.push(text);
        }, 5);
      });
      await typeInto(page, { label: 'Your question' }, 'What does the lighthouse keeper record?');
      await page.keyboard.press('Enter');
      await waitForText(page, '.meta', 'completion tokens', 30_000);
      const streamed = await page.evaluate(() => (window as unknown as { streamed: string[] }).streamed);
      const partial = streamed.filter((text) => text !== '' && text.length < FAKE_ANSWER.length);
      expect(partial.length).toBeGreaterThanOrEqual(3);
      expect((await textOf(page, '.answer-text'))[0]).toBe(FAKE_ANSWER);
      expect((await textOf(page, '.meta'))[0]).toMatch(/cost \d/);
      await press(page, { selector: '.sources > summary' });
      await press(page, { selector: '.sources .references summary' });
      await waitForText(page, '.sources .ref-content', 'lighthouse keeper records every storm');
      expect((await textOf(page, '.sources .ref-source'))[0]).toBe('papers/harbour.pdf, page 1');
      expect((await textOf(page, '.sources .ref-score'))[0]).toMatch(/score [01]\.\d{3}/);
      await checkpoint('08-playground');

      // An access policy: the live check refuses an e-mail the patterns do not match.
      phase = 'An access policy';
      await press(page, { text: 'Policies', selector: '.tabs a' });
      await waitForPath(page, '/endpoints/my-documents/policies');
      await typeInto(page, { label: 'Policy name' }, 'colleagues');
      await typeInto(page, { label: 'Patterns' }, OWNER.email);
      await page.keyboard.press('Enter');
      await page.keyboard.type('.*@example\\.org');
      await typeInto(page, { label: 'Would this e-mail pass?' }, 'mallory@evil.test');
      await waitForText(page, '.check-result .refused', 'Refused: mallory@evil.test matches no pattern');
      await checkpoint('09-policies');
      await page.keyboard.down('Control');
      await page.keyboard.press('KeyA');
      await page.keyboard.up('Control');
      await page.keyboard.type('bob@example.org');
      await waitForText(page, '.check-result .pass', 'Allowed: bob@example.org matches .*@example\\.org');
      await press(page, { text: 'Add the policy' });
      await waitForText(page, '.policy', 'colleagues');

      // The owner is on the list: the playground still answers.
      phase = 'The owner is on the list';
      await press(page, { text: 'Playground', selector: '.tabs a' });
      await typeInto(page, { label: 'Your question' }, 'And the glaciers?');
      await page.keyboard.press('Enter');
      await waitForText(page, '.policy-entries', 'access: applied', 30_000);

      await checkpoint('10-policy-added');

      // The endpoint's settings are saved.
      phase = "The endpoint's settings";
      await press(page, { text: 'Settings', selector: '.tabs a' });
      await typeInto(page, { label: 'Summary' }, 'Answers from my documents.');
      await press(page, { text: 'Save', selector: '.form-actions button' });
      await waitForText(page, '.notice', 'Saved.');
      await checkpoint('15-endpoint-settings');

      // Nothing complained anywhere, and every control had a label.
      phase = 'Nothing complained anywhere';
      for (const seen of checked)
        expect({ page: seen.page, problems: seen.problems, unlabelled: seen.unlabelled }).toEqual({
          page: seen.page,
          problems: [],
          unlabelled: [],
        });
    }),
    300_000,
  );

  test(
    'the endpoint is published on a marketplace connected from the console',
    diagnosed(async () => {
      phase = 'publish';
      problems.console.length = 0;
      problems.requests.length = 0;
      await visit(page, `${knode.url}/endpoints/my-documents/publish`);
      // The form proposes SyftHub's address: the hub double's replaces it.
      await replaceInto(page, { label: 'Marketplace URL' }, hub.url);
      await typeInto(page, { label: 'User name' }, 'ada');
      await typeInto(page, { label: 'Password' }, HUB_PASSWORD);
      await page.keyboard.press('Enter');
      await waitForText(page, '.policy-list', `${hub.url} as ada`);
      await press(page, { text: 'Publish', selector: '.form-actions button' });
      await waitForText(page, '.results', "Published to 'SyftHub'");
      await waitForText(page, '.badge', 'published');
      expect(hub.endpointsOf('ada').get('my-documents')?.name).toBe('My documents');
      await checkpoint('11-publish');
      expect(checked.at(-1)).toEqual({ page: '11-publish', unlabelled: [], problems: [] });
    }),
    120_000,
  );

  test(
    "consumers' queries appear in the usage charts, apart from the owner's playground questions",
    diagnosed(async () => {
      phase = 'usage';
      problems.console.length = 0;
      problems.requests.length = 0;
      // Two marketplace users ask through the hub's satellite tokens: one is let in, one is refused by the access policy.
      for (const [consumer, status] of [
        ['bob@example.org', 200],
        ['mallory@evil.test', 403],
      ] as const) {
        const response = await fetch(`${knode.url}/api/v1/endpoints/my-documents/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${await hub.mintToken(consumer, 'ada')}`, 'content-type': 'application/json' },
          body: JSON.stringify({ messages: 'What does the lighthouse keeper record?', stop_sequences: [] }),
        });
        expect(response.status).toBe(status);
      }
      await visit(page, `${knode.url}/endpoints/my-documents/usage`);
      // Two playground questions and the two consumers'.
      await waitForText(page, '[data-stat="queries"] dd', '4');
      await waitForText(page, '[data-stat="refused"] dd', '1 access');
      await page.waitForSelector('.chart canvas');
      expect(await page.$$eval('.chart canvas', (canvases) => canvases.length)).toBe(2);
      await waitForText(page, '[data-usage="callers"]', 'bob@example.org');
      await checkpoint('13-usage');
      // Without the owner's own questions only the consumers' are left.
      await press(page, { label: 'Include my questions from the playground' }, 'Space');
      await waitForText(page, '[data-stat="queries"] dd', '2');
      expect((await textOf(page, '[data-usage="callers"] tbody td:first-child')).sort()).toEqual(['bob@example.org', 'mallory@evil.test']);
      expect(checked.at(-1)).toEqual({ page: '13-usage', unlabelled: [], problems: [] });
      expect(problems).toEqual({ console: [], requests: [] });
    }),
    120_000,
  );

  test(
    "settings: the marketplace's state, the public URL, the tunnel's state and the tenant's members",
    diagnosed(async () => {
      phase = 'settings';
      problems.console.length = 0;
      problems.requests.length = 0;
      const registered = await fetch(`${knode.url}/api/v1/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'grace@example.com', password: 'another long password', tenant_name: 'grace' }),
      });
      expect(registered.status).toBe(201);
      await visit(page, `${knode.url}/settings`);
      // The marketplace connected on the publish page: its session and what is published there.
      await waitForText(page, '[data-marketplace="SyftHub"]', 'Published: my-documents');
      await waitForText(page, '[data-marketplace="SyftHub"] [data-fact="session"]', 'Logged in');
      await waitForText(page, '[data-settings="tunnel"] .badge', 'stopped');
      await press(page, { text: 'Sync', selector: '[data-marketplace="SyftHub"] button' });
      await waitForText(page, '[data-marketplace="SyftHub"]', 'Synced: my-documents.');
      // This knode: development mode, its data folder, and the disk use of each dataset.
      await waitForText(page, '[data-settings="mode"]', 'Development mode');
      await waitForText(page, '[data-settings="storage"]', 'documents');
      // The public URL, by keyboard: the hub is told first, then it is shown.
      await typeInto(page, { label: 'Public URL' }, 'https://ada.example.net');
      await page.keyboard.press('Enter');
      await waitForText(page, '[data-settings="public-url"]', 'https://ada.example.net (from set here or through the API)');
      expect(hub.domainOf('ada')).toBe('https://ada.example.net');
      // A member is added by e-mail, then removed.
      await typeInto(page, { label: 'Add a member by e-mail' }, 'grace@example.com');
      await page.keyboard.press('Enter');
      await waitForText(page, '[data-settings="members"]', 'grace@example.com');
      await checkpoint('14-settings');
      await press(page, { label: 'Remove grace@example.com' });
      await page.waitForFunction(() => !(document.querySelector('[data-settings="members"]')?.textContent ?? '').includes('grace@'));
      expect(checked.at(-1)).toEqual({ page: '14-settings', unlabelled: [], problems: [] });
      expect(problems).toEqual({ console: [], requests: [] });
    }),
    120_000,
  );

  test(
    'a larger folder shows its progress live, and stops, starts and reindexes',
    diagnosed(async () => {
      phase = 'a larger folder';
      problems.console.length = 0;
      problems.requests.length = 0;
      page.on('dialog', (dialog) => void dialog.accept());
      await visit(page, `${knode.url}/datasets/new`);
      await page.type('input[name="ingestionPath"]', realpathSync(library));
      await page.type('form input[maxlength="200"]', 'library');
      await page.click('button[type="submit"]');
      await waitForPath(page, /^\/datasets\/[0-9a-f-]{36}$/);
      // The rate and the time left once two samples a few seconds apart have moved.
      await page.waitForFunction(
        () =>
          /files\/(s|min)/.test(document.querySelector('[data-stat="rate"]')?.textContent ?? '') &&
          Number.parseInt(document.querySelector('[data-stat="indexed"] dd')?.textContent ?? '0', 10) >= 30,
        { timeout: 120_000 },
      );
      await waitForText(page, '.stats', `of ${LIBRARY_FILES} files`);
      await checkpoint('04-indexing');
      // Stopped: nothing more is indexed until it starts again; the folder is reconciled then.
      await clickButton(page, 'Stop');
      await waitForText(page, '.badge', 'stopped');
      await waitForText(page, '.notice', 'Stopped');
      await clickButton(page, 'Start');
      await page.waitForFunction(() => !(document.querySelector('h1 .badge')?.textContent ?? '').includes('stopped'));
      // Reindexed: every file queued again (when this machine is quick, it may be done before we look).
      await clickButton(page, 'Reindex');
      await page
        .waitForFunction(() => Number(document.querySelector('[data-stat="pending"] dd')?.textContent) > 0, {
          timeout: 10_000,
          polling: 100,
        })
        .catch(() => undefined);
      // Deleted while it works: the work is cancelled and the dataset is gone.
      await clickButton(page, 'Delete');
      await waitForPath(page, '/datasets');
      await waitForText(page, 'table', 'documents');
      expect(await textOf(page, 'tbody tr')).toHaveLength(1);
      expect(problems.console).toEqual([]);
      expect(problems.requests).toEqual([]);
    }),
    300_000,
  );

  test(
    'a refused token brings the login page back, and logging in returns to the page',
    diagnosed(async () => {
      phase = 'a refused token';
      problems.console.length = 0;
      problems.requests.length = 0;
      await page.evaluate(() => localStorage.setItem('knode.token', 'not-a-valid-token'));
      await visit(page, `${knode.url}/datasets`);
      await waitForPath(page, '/login');
      expect(new URL(page.url()).searchParams.get('next')).toBe('/datasets');
      const loginTimes = await renderTimes();
      measured.login_first_render_ms = loginTimes.firstRender;
      measured.login_first_contentful_paint_ms = loginTimes.firstContentfulPaint;
      await waitForText(page, '.notice', 'Your session has ended');
      // The only complaint is the refused token itself.
      expect(problems.requests).toEqual([`GET ${knode.url}/api/v1/auth/me: 401`]);
      expect(problems.console.every((text) => text.includes('401'))).toBe(true);
      problems.requests.length = 0;
      problems.console.length = 0;
      await typeInto(page, { label: 'E-mail' }, OWNER.email);
      await typeInto(page, { label: 'Password' }, OWNER.password);
      await page.keyboard.press('Enter');
      await waitForPath(page, '/datasets');
      await waitForText(page, 'table', 'documents');
      await checkpoint('12-datasets');
      // A reload stays logged in.
      await reload(page);
      await waitForText(page, 'table', 'documents');
      expect(new URL(page.url()).pathname).toBe('/datasets');
      expect(checked.at(-1)).toEqual({ page: '12-datasets', unlabelled: [], problems: [] });
    }),
    120_000,
  );

  test('the initial load is small, and its pages mark their first render', () => {
    console.log(`console measurements: ${JSON.stringify(measured)}`);
    expect(measured.initial_js_encoded_bytes).toBeGreaterThan(0);
    expect(measured.initial_js_encoded_bytes).toBeLessThan(MAX_INITIAL_JS_BYTES);
    expect(measured.setup_first_render_ms).toBeGreaterThan(0);
    expect(measured.login_first_render_ms).toBeGreaterThan(0);
  });
});
