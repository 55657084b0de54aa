/**
 * Driving the console in Chromium (puppeteer-core): what a page complains about, reaching a control by
 * keyboard, typing, pressing, and waiting for text or an address. Shared by the browser tests.
 */
import puppeteer, { type Browser, type ElementHandle, type Page } from 'puppeteer-core';

export const CHROMIUM = process.env.KNODE_CHROMIUM ?? '/usr/bin/chromium';
/** Headless Chromium's flags: no sandbox (CI runs as root), no GPU, no first-run pages. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--no-default-browser-check',
  '--font-render-hinting=none',
];

/** What a test file closes when it is done with its page: its Chromium, or its context in the shared one. */
export interface BrowserSession {
  close(): Promise<void>;
}

/** The Chromium the browser files of this process share, once `shareChromium` has been called. */
let shared: { browser?: Promise<Browser> } | undefined;

/**
 * Makes every later `openBrowser` of this process open a context (its own storage and cookies, as a new
 * browser would give it) in one Chromium, instead of launching a Chromium of its own: launching and closing
 * one took a second or two of each browser file. test/browser/share-chromium.ts calls it when preloaded (npm
 * test does), and closes the Chromium with the answer after the last file: a file run alone keeps its own.
 */
export function shareChromium(): () => Promise<void> {
  shared = {};
  return async () => {
    const browser = await shared?.browser?.catch(() => undefined);
    shared = undefined;
    await browser?.close();
  };
}

function launchChromium(): Promise<Browser> {
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

async function sharedChromium(sharing: { browser?: Promise<Browser> }): Promise<Browser> {
  const running = await sharing.browser?.catch(() => undefined);
  if (running?.connected) return running;
  sharing.browser = launchChromium();
  return sharing.browser;
}

/** Chromium with one page of 1280 × 860, waiting at most 20 s for anything. */
export async function openBrowser(): Promise<{ browser: BrowserSession; page: Page }> {
  const browser = shared ? await (await sharedChromium(shared)).createBrowserContext() : await launchChromium();
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  page.setDefaultTimeout(20_000);
  return { browser, page };
}

/**
 * How long the page must have no request in flight to count as loaded. Puppeteer's `networkidle0` waits
 * 500 ms after every visit, most of a visit's time here; the console's requests on load follow each other
 * within a few milliseconds, so a quarter of a second of quiet still means it has stopped asking.
 */
const QUIET_MS = 250;

/** Opens `url` and waits until the page has loaded and asked for everything it asks for on load. */
export async function visit(page: Page, url: string): Promise<void> {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForNetworkIdle({ idleTime: QUIET_MS });
}

/** Reloads the page, then waits as `visit` does. */
export async function reload(page: Page): Promise<void> {
  await page.reload({ waitUntil: 'load' });
  await page.waitForNetworkIdle({ idleTime: QUIET_MS });
}

/** Chromium on the console at `url`, logged in with `token` (the console keeps it in localStorage). */
export async function openConsoleAs(url: string, token: string): Promise<{ browser: BrowserSession; page: Page }> {
  const opened = await openBrowser();
  await visit(opened.page, `${url}/login`);
  await opened.page.evaluate((value: string) => localStorage.setItem('knode.token', value), token);
  return opened;
}

export interface Problems {
  console: string[];
  requests: string[];
}

/** Everything the page complains about: console errors, uncaught exceptions, failed or refused requests. */
export function watch(page: Page): Problems {
  const problems: Problems = { console: [], requests: [] };
  page.on('console', (message) => {
    if (message.type() === 'error') problems.console.push(message.text());
  });
  page.on('pageerror', (error) => problems.console.push(`uncaught: ${(error as Error).message}`));
  page.on('requestfailed', (request) => {
    // A stream the page itself stopped is not a failure.
    if (request.failure()?.errorText !== 'net::ERR_ABORTED') problems.requests.push(`${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.requests.push(`${response.request().method()} ${response.url()}: ${response.status()}`);
  });
  return problems;
}

export interface Target {
  /** The control's label (or aria-label) contains this. */
  label?: string;
  /** A button's or link's text starts with this. */
  text?: string;
  selector?: string;
}

/** Presses Tab until the target has the focus: it fails when the target cannot be reached by keyboard. */
export async function tabTo(page: Page, target: Target, max = 120): Promise<void> {
  for (let presses = 0; presses < max; presses++) {
    await page.keyboard.press('Tab');
    const found = await page.evaluate((wanted: Target) => {
      const element = document.activeElement as HTMLElement | null;
      if (!element || element === document.body) return false;
      if (wanted.selector && !element.matches(wanted.selector)) return false;
      if (wanted.label) {
        const labels = [...((element as HTMLInputElement).labels ?? [])].map((label) => label.textContent ?? '');
        const name = `${labels.join(' ')} ${element.getAttribute('aria-label') ?? ''}`;
        if (!name.includes(wanted.label)) return false;
      }
      if (wanted.text) {
        const text = `${element.getAttribute('aria-label') ?? ''} ${(element.textContent ?? '').trim()}`;
        if (!(element.textContent ?? '').trim().startsWith(wanted.text) && !text.includes(wanted.text)) return false;
      }
      return true;
    }, target);
    if (found) return;
  }
  throw new Error(`cannot reach ${JSON.stringify(target)} with the Tab key`);
}

export async function typeInto(page: Page, target: Target, text: string): Promise<void> {
  await tabTo(page, target);
  await page.keyboard.type(text);
}

/** Replaces what a field holds (a suggested value) by keyboard: select all, then type over it. */
export async function replaceInto(page: Page, target: Target, text: string): Promise<void> {
  await tabTo(page, target);
  await page.keyboard.down('Control');
  await page.keyboard.press('KeyA');
  await page.keyboard.up('Control');
  await page.keyboard.type(text);
}

export async function press(page: Page, target: Target, key: 'Enter' | 'Space' = 'Enter'): Promise<void> {
  await tabTo(page, target);
  await page.keyboard.press(key);
}

/** Form controls that no label names (a label element, aria-label or aria-labelledby). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea, button')]
      .filter((element) => !(element instanceof HTMLInputElement && element.type === 'hidden'))
      .filter((element) => {
        if (element instanceof HTMLButtonElement) return !((element.textContent ?? '').trim() || element.getAttribute('aria-label'));
        const labels = (element as HTMLInputElement).labels;
        const labelled = [...(labels ?? [])].some((label) => (label.textContent ?? '').trim() !== '');
        return !(labelled || element.getAttribute('aria-label') || element.getAttribute('aria-labelledby'));
      })
      .map((element) => element.outerHTML.slice(0, 160)),
  );
}

export async function waitForPath(page: Page, path: string | RegExp, timeout = 15_000): Promise<void> {
  await page.waitForFunction(
    (wanted: string, isRegex: boolean) => (isRegex ? new RegExp(wanted).test(location.pathname) : location.pathname === wanted),
    { timeout },
    typeof path === 'string' ? path : path.source,
    typeof path !== 'string',
  );
}

export async function waitForText(page: Page, selector: string, text: string, timeout = 15_000): Promise<void> {
  await page.waitForFunction(
    (css: string, wanted: string) => [...document.querySelectorAll(css)].some((element) => (element.textContent ?? '').includes(wanted)),
    { timeout },
    selector,
    text,
  );
}

/** Clicks the button whose text is exactly `text` (the mouse this time), once it is enabled. */
export async function clickButton(page: Page, text: string): Promise<void> {
  const button = await page.waitForFunction(
    (wanted: string) =>
      [...document.querySelectorAll('button')].find((element) => (element.textContent ?? '').trim() === wanted && !element.disabled),
    {},
    text,
  );
  const element = button.asElement() as ElementHandle<Element> | null;
  if (!element) throw new Error(`no button '${text}'`);
  await element.click();
}

export async function textOf(page: Page, selector: string): Promise<string[]> {
  return page.$$eval(selector, (elements) => elements.map((element) => (element.textContent ?? '').trim()));
}
