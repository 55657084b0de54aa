/**
 * The set-up every in-process browser test repeats: knode's app served on a loopback port, Chromium on its
 * console logged in as the owner, and the page's complaints collected from the first visit on. Also where the
 * screenshots go (test-output/screenshots/, or SCREENSHOTS_DIR), so that every file puts them in one place.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Page } from 'puppeteer-core';
import type { TestApp, TestUser } from '../helpers/app.ts';
import { type BrowserSession, openConsoleAs, type Problems, watch } from './page.ts';

export const SCREENSHOTS = resolve(import.meta.dir, '../..', process.env.SCREENSHOTS_DIR ?? 'test-output/screenshots');

export interface ConsoleSession {
  /** The console's address (http://127.0.0.1:<port>). */
  url: string;
  browser: BrowserSession;
  page: Page;
  /** What the page complained about since it was opened. */
  problems: Problems;
}

/**
 * Serves `t` on a free loopback port and opens Chromium on its console with `owner`'s token; the screenshots'
 * folder exists afterwards. The caller closes `browser` before `t`.
 */
export async function openConsoleSession(t: TestApp, owner: TestUser): Promise<ConsoleSession> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const url = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const { browser, page } = await openConsoleAs(url, owner.token);
  return { url, browser, page, problems: watch(page) };
}
