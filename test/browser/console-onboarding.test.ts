/**
 * A newcomer's way onto SyftHub in the console, in Chromium and by keyboard alone: the settings page proposes
 * SyftHub (its address filled in, one line on what it is), the marketplace is connected there (the suggested
 * URL replaced by the hub double's, as another hub's would be), and the tunnel starts with the SyftHub account:
 * the hub hands out the ngrok credential and names the host, nothing is pasted. knode runs in this process (on a
 * loopback port) so that it can be given the test tunnel provider; development mode, so the console at this
 * machine holds the operator's settings. Screenshots go where the other browser tests' go (test-output/screenshots/, or docs/screenshots/ with
 * `npm run screenshots`).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'puppeteer-core';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { FakeTunnelProvider } from '../fakes/tunnel.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type BrowserSession, openConsoleAs, press, replaceInto, typeInto, unlabelledControls, visit, waitForText, watch } from './page.ts';

const SCREENSHOTS = resolve(import.meta.dir, '../..', process.env.SCREENSHOTS_DIR ?? 'test-output/screenshots');
const HUB_PASSWORD = 'a hub password';

describe('onto SyftHub from the console', () => {
  let hub: FakeSyftHub;
  let t: TestApp;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  const provider = new FakeTunnelProvider();

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    hub = await startFakeSyftHub();
    hub.addUser({ username: 'ada', email: 'ada@hub.example', password: HUB_PASSWORD });
    // Like ngrok, the provider lets a hub credential bind only the host the hub bound it to.
    provider.bindingOf = (token) => hub.tunnelCredentials.find((credential) => credential.auth_token === token)?.domain;
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true', SVC_TUNNEL_DOMAIN: 'tunnels.example' }, undefined, {
      tunnelProvider: provider,
    });
    const owner = await t.user('ada');
    url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    ({ browser, page } = await openConsoleAs(url, owner.token));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await hub?.close();
  });

  test('SyftHub is proposed, connected by keyboard, and its account starts the tunnel', async () => {
    const problems = watch(page);
    await visit(page, `${url}/settings`);
    // The form proposes SyftHub and says what it is.
    await waitForText(page, '[data-connect="about"]', 'SyftHub is the marketplace where people find your endpoints');
    const suggested = await page.$eval(
      'form[aria-labelledby="connect-title"] input[type="url"]',
      (input) => (input as HTMLInputElement).value,
    );
    expect(suggested).toBe('https://syfthub.openmined.org');
    await page.screenshot({ path: join(SCREENSHOTS, '16-connect-syfthub.png'), fullPage: true });

    await replaceInto(page, { label: 'Marketplace URL' }, hub.url);
    await typeInto(page, { label: 'User name' }, 'ada');
    await typeInto(page, { label: 'Password' }, HUB_PASSWORD);
    await page.keyboard.press('Enter');
    await waitForText(page, '[data-marketplace="SyftHub"]', `${hub.url} as ada`);
    await waitForText(page, '[data-settings="tunnel"] .badge', 'stopped');

    // One button: the hub hands out the credential and names the host.
    await press(page, { text: 'Start the tunnel with my SyftHub account' });
    await waitForText(page, '[data-settings="tunnel"]', 'Online at https://ada.syfthub.ngrok.app');
    await waitForText(page, '[data-settings="tunnel"] .badge', 'online');
    await waitForText(page, '[data-settings="public-url"]', 'https://ada.syfthub.ngrok.app (from the tunnel)');
    const credential = hub.tunnelCredentials.at(-1);
    expect(credential).toMatchObject({ username: 'ada', domain: 'ada.syfthub.ngrok.app' });
    expect(provider.requests.at(-1)).toMatchObject({ token: credential?.auth_token as string, domain: 'ada.syfthub.ngrok.app' });
    expect(hub.domainOf('ada')).toBe('https://ada.syfthub.ngrok.app');
    // The credential is the hub's and knode's secret: the page never holds it.
    expect(await page.content()).not.toContain(credential?.auth_token as string);
    await page.evaluate(async () => {
      window.scrollTo(0, 0);
      await document.fonts.ready;
    });
    await page.screenshot({ path: join(SCREENSHOTS, '17-tunnel-syfthub.png'), fullPage: true });

    expect(await unlabelledControls(page)).toEqual([]);
    expect(problems).toEqual({ console: [], requests: [] });
  }, 60_000);
});
