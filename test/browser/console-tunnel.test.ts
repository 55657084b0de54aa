/**
 * The tunnel from the console's settings page, in Chromium, against a knode started in this process (on a
 * loopback port) so that it can be given the test tunnel provider instead of ngrok: started with a token,
 * online at its URL, reconnecting after a drop (when, and why), stopped. Development mode: the console at
 * this machine holds the operator's settings.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Page } from 'puppeteer-core';
import { type FakeSyftHub, startFakeSyftHub } from '../fakes/syfthub.ts';
import { FakeTunnelProvider } from '../fakes/tunnel.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { connectMarketplace } from '../helpers/hub.ts';
import { type BrowserSession, openConsoleAs, press, reload, typeInto, visit, waitForText, watch } from './page.ts';

describe('the tunnel in the console', () => {
  let hub: FakeSyftHub;
  let t: TestApp;
  let url: string;
  let browser: BrowserSession;
  let page: Page;
  const provider = new FakeTunnelProvider();

  beforeAll(async () => {
    hub = await startFakeSyftHub();
    t = await createTestApp({ SVC_OPEN_REGISTRATION: 'true', SVC_TUNNEL_DOMAIN: 'tunnels.example' }, undefined, {
      tunnelProvider: provider,
    });
    const owner = await t.user('tina');
    await connectMarketplace(t, owner, hub, 'tina');
    url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    ({ browser, page } = await openConsoleAs(url, owner.token));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await hub?.close();
  });

  test('started with a token, online at its URL, reconnecting after a drop, then stopped', async () => {
    const problems = watch(page);
    await visit(page, `${url}/settings`);
    await waitForText(page, '[data-settings="tunnel"] .badge', 'stopped');
    await typeInto(page, { label: 'ngrok authtoken' }, 'ngrok-token-tina');
    await page.keyboard.press('Enter');
    await waitForText(page, '[data-settings="tunnel"]', 'Online at https://tina.tunnels.example');
    await waitForText(page, '[data-settings="public-url"]', 'from the tunnel');

    expect(provider.requests.at(-1)).toMatchObject({ token: 'ngrok-token-tina', domain: 'tina.tunnels.example' });

    // The service drops the tunnel and is down: the page says when knode tries again, and why.
    provider.outage = 'network unreachable';
    provider.dropAll('connection reset by the tunnel service');
    await reload(page);
    await waitForText(page, '[data-settings="tunnel"] .badge', 'reconnecting');
    await waitForText(page, '[data-settings="tunnel"]', 'Reconnecting in 5 s: connection reset by the tunnel service');

    await press(page, { text: 'Stop the tunnel' });
    await waitForText(page, '[data-settings="tunnel"] .badge', 'stopped');
    expect(provider.open).toBe(0);
    expect(problems).toEqual({ console: [], requests: [] });
  }, 60_000);
});
