import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { DomainError } from '../src/domain/errors.ts';
import { HubClients } from '../src/syfthub/hub-client.ts';
import { TUNNEL_BACKOFF } from '../src/tunnel/manager.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';
import { FakeTunnelProvider } from './fakes/tunnel.ts';
import { createTestApp, issueLocs, type TestApp, tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { connectMarketplace, logCollector } from './helpers/hub.ts';
import { waitFor } from './helpers/wait.ts';

/** What GET /settings/proxy answers without a tunnel. */
const STOPPED = { connected: false, public_url: null, has_token: false, state: 'stopped', retry_in_seconds: null, error: null };

describe('the tunnel (/settings/proxy)', () => {
  let hub: FakeSyftHub;
  let t: TestApp;
  let provider: FakeTunnelProvider;
  const log = logCollector();

  beforeAll(async () => {
    // More accounts log in here than the hub's 10 a minute (a limit the marketplace tests check).
    hub = await startFakeSyftHub({ loginsPerMinute: 1000 });
  });
  afterAll(() => hub.close());

  const fresh = async (options: { provider?: FakeTunnelProvider | null; dataDir?: string } = {}) => {
    provider = options.provider === undefined ? new FakeTunnelProvider() : (options.provider ?? new FakeTunnelProvider());
    t = await createTestApp(
      { SVC_ADMIN_API_KEY: ADMIN_KEY, SVC_OPEN_REGISTRATION: 'true', SVC_TUNNEL_DOMAIN: 'tunnels.example', SVC_LOG_LEVEL: 'info' },
      options.dataDir,
      { tunnelProvider: options.provider === null ? null : provider, logDestination: log.destination },
    );
  };
  afterEach(async () => {
    await t?.close();
  });

  const proxy = (method: 'GET' | 'POST' | 'DELETE', payload?: object, tenant?: string, token = ADMIN_KEY) =>
    t.request({
      method,
      url: '/api/v1/settings/proxy',
      token,
      headers: tenant ? { 'x-tenant-name': tenant } : {},
      ...(payload ? { payload } : {}),
    });

  async function tenantWithMarketplace(name: string) {
    const user = await t.user(name);
    const marketplace = await connectMarketplace(t, user, hub, `${name}-hub`);
    return { user, marketplace };
  }

  test('opens a tunnel at <marketplace username>.<SVC_TUNNEL_DOMAIN>, stores the token encrypted and publishes the URL', async () => {
    await fresh();
    const { user, marketplace } = await tenantWithMarketplace('alpha');
    const response = await proxy('POST', { tunnel_token: 'ngrok-token-alpha' }, user.tenant);
    expect(response.statusCode).toBe(200);
    const url = `https://${marketplace.username}.tunnels.example`;
    expect(response.json()).toEqual({
      connected: true,
      public_url: url,
      has_token: true,
      state: 'online',
      retry_in_seconds: null,
      error: null,
    });
    expect(provider.requests.at(-1)).toMatchObject({ token: 'ngrok-token-alpha', domain: `${marketplace.username}.tunnels.example` });
    expect(hub.domainOf(marketplace.username)).toBe(url);
    expect(
      (
        await t.request({ method: 'GET', url: '/api/v1/settings/public-url', token: ADMIN_KEY, headers: { 'x-tenant-name': user.tenant } })
      ).json(),
    ).toEqual({ public_url: url, source: 'tunnel' });
    expect((await proxy('GET', undefined, user.tenant)).json()).toEqual({
      connected: true,
      public_url: url,
      has_token: true,
      state: 'online',
      retry_in_seconds: null,
      error: null,
    });
    const row = await t.services.database.db.selectFrom('tenant_settings').selectAll().execute();
    expect(JSON.stringify(row)).not.toContain('ngrok-token-alpha');
    expect(response.body + log.lines.join('')).not.toContain('ngrok-token-alpha');
  });

  test('a refused token is a 400 with the provider reason, and nothing is stored', async () => {
    await fresh();
    const { user } = await tenantWithMarketplace('bravo');
    provider.refused.set('bad-token', 'ERR_NGROK_105: The authtoken you specified is invalid');
    const response = await proxy('POST', { tunnel_token: 'bad-token' }, user.tenant);
    expect(response.statusCode).toBe(400);
    expect(response.json().detail).toContain('ERR_NGROK_105');
    expect(response.json().detail).not.toContain('bad-token');
    expect((await proxy('GET', undefined, user.tenant)).json()).toEqual(STOPPED);
  });

  test('404 without a default marketplace, and 404 when no tunnel service can be loaded', async () => {
    await fresh();
    const user = await t.user('charlie');
    const noMarketplace = await proxy('POST', { tunnel_token: 'x' }, user.tenant);
    expect(noMarketplace.statusCode).toBe(404);
    expect(noMarketplace.json().detail).toContain('marketplace');
    await t.close();
    await fresh({ provider: new FakeTunnelProvider(false) });
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const response = await proxy(method, method === 'POST' ? { tunnel_token: 'x' } : undefined);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ detail: 'Tunnel service not configured' });
    }
  });

  test('the marketplace refusing the URL closes the tunnel and keeps nothing', async () => {
    await fresh();
    const { user } = await tenantWithMarketplace('delta');
    hub.refuseDomains('domain not allowed');
    try {
      const response = await proxy('POST', { tunnel_token: 'token-delta' }, user.tenant);
      expect(response.statusCode).toBe(502);
      expect(provider.open).toBe(0);
      expect((await proxy('GET', undefined, user.tenant)).json()).toEqual(STOPPED);
    } finally {
      hub.refuseDomains(undefined);
    }
  });

  test('after a drop it reconnects with backoff (5 s, doubling, at most 60 s) and publishes the URL again', async () => {
    await fresh();
    const { user, marketplace } = await tenantWithMarketplace('echo');
    await proxy('POST', { tunnel_token: 'token-echo' }, user.tenant);
    const failures = () => log.lines.filter((line) => line.includes('tunnel connection failed') && line.includes(user.tenant));
    provider.outage = 'network unreachable';
    provider.dropAll();
    // The live state: reconnecting, when, and why.
    const dropped = (await proxy('GET', undefined, user.tenant)).json();
    expect(dropped).toMatchObject({ connected: false, has_token: true, state: 'reconnecting', retry_in_seconds: 5 });
    expect(dropped.error).toEqual(expect.any(String));
    // Each attempt is due exactly one delay after the last; a failed one logs the delay until the next.
    const delays = [TUNNEL_BACKOFF.initialMs];
    for (let attempt = 1; attempt <= 5; attempt++) {
      const delay = delays.at(-1) as number;
      expect(t.clock.waiting).toContain(delay);
      const attempts = provider.requests.length;
      t.clock.advance(delay);
      const failed = await waitFor(`attempt ${attempt} to fail`, async () => failures()[attempt - 1]);
      expect(provider.requests.length).toBe(attempts + 1);
      delays.push(JSON.parse(failed).retry_in_ms);
    }
    expect(delays).toEqual([5_000, 10_000, 20_000, 40_000, 60_000, 60_000]);
    expect((await proxy('GET', undefined, user.tenant)).json()).toMatchObject({
      state: 'reconnecting',
      retry_in_seconds: 60,
      error: 'network unreachable',
    });
    provider.outage = undefined;
    t.clock.advance(60_000);
    await waitFor('the reconnection', async () => (await proxy('GET', undefined, user.tenant)).json().connected === true);
    expect(provider.open).toBe(1);
    expect(hub.domainOf(marketplace.username)).toBe(`https://${marketplace.username}.tunnels.example`);
    // Connected again, the backoff starts over.
    provider.dropAll();
    expect(t.clock.waiting).toContain(TUNNEL_BACKOFF.initialMs);
  });

  test('DELETE disconnects, forgets the token and clears the URL at the marketplace', async () => {
    await fresh();
    const { user, marketplace } = await tenantWithMarketplace('foxtrot');
    await proxy('POST', { tunnel_token: 'token-foxtrot' }, user.tenant);
    const response = await proxy('DELETE', undefined, user.tenant);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(STOPPED);
    expect(provider.open).toBe(0);
    expect(hub.domainOf(marketplace.username)).toBeNull();
    expect((await proxy('GET', undefined, user.tenant)).json()).toEqual(STOPPED);
  });

  test('a stored token reconnects at start-up without blocking it', async () => {
    const dataDir = tempDir();
    await fresh({ dataDir });
    const { user, marketplace } = await tenantWithMarketplace('golf');
    await proxy('POST', { tunnel_token: 'token-golf' }, user.tenant);
    await t.close({ keepData: true });
    await fresh({ dataDir });
    expect(provider.requests).toHaveLength(0); // nothing happens before the server listens
    await t.services.tunnels.start(8080);
    await waitFor('the reconnection', async () => (await proxy('GET', undefined, user.tenant)).json().connected === true);
    expect(provider.requests[0]).toMatchObject({ token: 'token-golf', domain: `${marketplace.username}.tunnels.example`, port: 8080 });
  });

  test('validation and credentials: 422 without a token, 401 without the admin key, 403 for a user token', async () => {
    await fresh();
    const user = await t.user('hotel');
    expect(issueLocs(await proxy('POST', {}))).toEqual(['body.tunnel_token']);
    expect(issueLocs(await proxy('POST', { tunnel_token: '' }))).toEqual(['body.tunnel_token']);
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const payload = method === 'POST' ? { tunnel_token: 'x' } : undefined;
      expect((await t.request({ method, url: '/api/v1/settings/proxy', ...(payload ? { payload } : {}) })).statusCode).toBe(401);
      expect((await proxy(method, payload, undefined, user.token)).statusCode).toBe(403);
    }
  });

  test("one tenant's tunnel is not another's", async () => {
    await fresh();
    const first = await tenantWithMarketplace('india');
    const second = await tenantWithMarketplace('juliet');
    await proxy('POST', { tunnel_token: 'token-india' }, first.user.tenant);
    expect((await proxy('GET', undefined, second.user.tenant)).json()).toEqual(STOPPED);
    await proxy('DELETE', undefined, second.user.tenant);
    expect((await proxy('GET', undefined, first.user.tenant)).json().connected).toBe(true);
  });

  describe('started with the SyftHub account ({"from_marketplace": true})', () => {
    /** The provider refuses a hub credential on any host but the one the hub bound it to, as ngrok does. */
    const bindHubCredentials = () => {
      provider.bindingOf = (token) => hub.tunnelCredentials.find((credential) => credential.auth_token === token)?.domain;
    };
    const credentialRequests = (username: string) =>
      hub.requests.filter((request) => request.path === '/api/v1/users/me/tunnel-credentials' && request.username === username);

    test("binds the host the hub names with the hub's credential, stores it encrypted and reuses it after a drop and a restart", async () => {
      const dataDir = tempDir();
      await fresh({ dataDir });
      bindHubCredentials();
      const { user, marketplace } = await tenantWithMarketplace('kilo');
      const response = await proxy('POST', { from_marketplace: true }, user.tenant);
      expect(response.statusCode).toBe(200);
      // The hub's host (`<username>.syfthub.ngrok.app`), not `<username>.<SVC_TUNNEL_DOMAIN>`.
      const host = `${marketplace.username}.syfthub.ngrok.app`;
      const online = {
        connected: true,
        public_url: `https://${host}`,
        has_token: true,
        state: 'online',
        retry_in_seconds: null,
        error: null,
      };
      expect(response.json()).toEqual(online);
      expect(credentialRequests(marketplace.username)).toHaveLength(1);
      const credential = hub.tunnelCredentials.at(-1);
      expect(credential).toMatchObject({ username: marketplace.username, domain: host });
      const token = credential?.auth_token as string;
      expect(provider.requests.at(-1)).toMatchObject({ token, domain: host });
      expect(hub.domainOf(marketplace.username)).toBe(`https://${host}`);
      // The credential is a secret like a pasted token: sealed in the database, never answered nor logged.
      const rows = await t.services.database.db.selectFrom('tenant_settings').selectAll().execute();
      expect(JSON.stringify(rows)).not.toContain(token);
      expect(response.body + log.lines.join('')).not.toContain(token);

      // A drop reconnects with the stored credential to the same host: the hub is not asked again.
      provider.dropAll();
      t.clock.advance(TUNNEL_BACKOFF.initialMs);
      await waitFor('the reconnection', async () => (await proxy('GET', undefined, user.tenant)).json().connected === true);
      expect(provider.requests.at(-1)).toMatchObject({ token, domain: host });

      // So does a restart.
      await t.close({ keepData: true });
      await fresh({ dataDir });
      bindHubCredentials();
      await t.services.tunnels.start(8080);
      await waitFor('the reconnection at start-up', async () => (await proxy('GET', undefined, user.tenant)).json().connected === true);
      expect(provider.requests).toEqual([{ token, domain: host, port: 8080 }]);
      expect((await proxy('GET', undefined, user.tenant)).json()).toEqual(online);
      expect(credentialRequests(marketplace.username)).toHaveLength(1);

      // Asked again, the hub hands out a new credential, which replaces the stored one.
      const again = await proxy('POST', { from_marketplace: true }, user.tenant);
      expect(again.statusCode).toBe(200);
      expect(credentialRequests(marketplace.username)).toHaveLength(2);
      expect(provider.requests.at(-1)?.token).toBe(hub.tunnelCredentials.at(-1)?.auth_token as string);
      expect(provider.open).toBe(1);
    });

    test('a stored hub credential that ngrok refuses is replaced by a fresh one, once until the tunnel is back', async () => {
      const dataDir = tempDir();
      await fresh({ dataDir });
      bindHubCredentials();
      const { user, marketplace } = await tenantWithMarketplace('quebec');
      const host = `${marketplace.username}.syfthub.ngrok.app`;
      await proxy('POST', { from_marketplace: true }, user.tenant);
      const first = hub.tunnelCredentials.at(-1)?.auth_token as string;
      // The hub's operator deleted it from the hub's ngrok account.
      provider.refused.set(first, 'ERR_NGROK_107: The authtoken you specified has been revoked');
      provider.dropAll();
      t.clock.advance(TUNNEL_BACKOFF.initialMs);
      await waitFor('the reconnection', async () => (await proxy('GET', undefined, user.tenant)).json().connected === true);
      expect(credentialRequests(marketplace.username)).toHaveLength(2);
      const second = hub.tunnelCredentials.at(-1)?.auth_token as string;
      expect(second).not.toBe(first);
      expect(provider.requests.slice(-2)).toEqual([
        { token: first, domain: host, port: 8080 },
        { token: second, domain: host, port: 8080 },
      ]);
      expect(log.lines.join('')).not.toContain(second);

      // Refused again and again (ngrok refuses every credential): one more is asked for, then only the backoff.
      provider.bindingOf = () => 'elsewhere.example';
      provider.dropAll();
      const failures = () => log.lines.filter((line) => line.includes('tunnel connection failed') && line.includes(user.tenant));
      t.clock.advance(TUNNEL_BACKOFF.initialMs);
      await waitFor('the first failure', async () => failures()[0]);
      t.clock.advance(TUNNEL_BACKOFF.initialMs * 2);
      await waitFor('the second failure', async () => failures()[1]);
      expect(credentialRequests(marketplace.username)).toHaveLength(3);

      // The stored credential is the last one handed out: a restart uses it.
      await t.close({ keepData: true });
      await fresh({ dataDir });
      await t.services.tunnels.start(8080);
      await waitFor('the reconnection at start-up', async () => (await proxy('GET', undefined, user.tenant)).json().connected === true);
      expect(provider.requests).toEqual([{ token: hub.tunnelCredentials.at(-1)?.auth_token as string, domain: host, port: 8080 }]);
    });

    test("the hub's 503 (not configured) and 502 (ngrok failed) are a 503 and a 502 that say so, and the running tunnel stays", async () => {
      await fresh();
      const { user, marketplace } = await tenantWithMarketplace('lima');
      await proxy('POST', { tunnel_token: 'token-lima' }, user.tenant);
      const running = (await proxy('GET', undefined, user.tenant)).json();
      const attempts = provider.requests.length;
      try {
        hub.failTunnelCredentials(503);
        const unconfigured = await proxy('POST', { from_marketplace: true }, user.tenant);
        expect(unconfigured.statusCode).toBe(503);
        expect(unconfigured.json().detail).toBe(
          "Marketplace 'hub-lima-hub' does not hand out tunnel credentials (503: Tunnel credentials service is not configured): " +
            'start the tunnel with an ngrok authtoken instead',
        );
        hub.failTunnelCredentials(502);
        const failed = await proxy('POST', { from_marketplace: true }, user.tenant);
        expect(failed.statusCode).toBe(502);
        expect(failed.json().detail).toBe(
          "Marketplace 'hub-lima-hub' could not get a tunnel credential from ngrok (502: Tunnel credential service returned an error)",
        );
      } finally {
        hub.failTunnelCredentials(undefined);
      }
      // The hub refusing knode's stored password (changed at the hub since) is the hub failing knode: 502.
      hub.setPassword(marketplace.username, 'changed at the hub');
      hub.expireSessions({ refresh: true });
      const refused = await proxy('POST', { from_marketplace: true }, user.tenant);
      expect(refused.statusCode).toBe(502);
      expect(refused.json().detail).toContain('refused the credentials');
      expect(refused.body).not.toContain(marketplace.password);
      expect(provider.requests.length).toBe(attempts);
      expect((await proxy('GET', undefined, user.tenant)).json()).toEqual(running);
    });

    test("404 without a default marketplace (another tenant's is never used) or without a tunnel service", async () => {
      await fresh();
      const { user: owner, marketplace } = await tenantWithMarketplace('mike');
      const other = await t.user('november');
      const handedOut = hub.tunnelCredentials.length;
      const missing = await proxy('POST', { from_marketplace: true }, other.tenant);
      expect(missing.statusCode).toBe(404);
      expect(missing.json().detail).toContain('marketplace');
      expect(hub.tunnelCredentials.length).toBe(handedOut);
      expect(provider.requests).toHaveLength(0);
      expect((await proxy('GET', undefined, owner.tenant)).json()).toEqual(STOPPED);
      // The tenant with the marketplace gets its own account's host.
      const own = await proxy('POST', { from_marketplace: true }, owner.tenant);
      expect(own.json().public_url).toBe(`https://${marketplace.username}.syfthub.ngrok.app`);
      expect((await proxy('GET', undefined, other.tenant)).json()).toEqual(STOPPED);
      // No tunnel service here: the hub is not asked for a credential that could not be used.
      await t.close();
      await fresh({ provider: new FakeTunnelProvider(false) });
      const { user } = await tenantWithMarketplace('oscar');
      const unavailable = await proxy('POST', { from_marketplace: true }, user.tenant);
      expect(unavailable.statusCode).toBe(404);
      expect(unavailable.json()).toEqual({ detail: 'Tunnel service not configured' });
      expect(credentialRequests('oscar-hub')).toHaveLength(0);
    });

    test('validation and credentials: 401 without or with a bad credential, 403 for a user token, 422 for both or neither', async () => {
      await fresh();
      const { user } = await tenantWithMarketplace('papa');
      const handedOut = hub.tunnelCredentials.length;
      const payload = { from_marketplace: true };
      expect((await t.request({ method: 'POST', url: '/api/v1/settings/proxy', payload })).statusCode).toBe(401);
      expect((await t.request({ method: 'POST', url: '/api/v1/settings/proxy', payload, token: 'not-a-token' })).statusCode).toBe(401);
      expect((await t.request({ method: 'POST', url: '/api/v1/settings/proxy', payload, token: 'x'.repeat(40) })).statusCode).toBe(401);
      expect((await proxy('POST', payload, user.tenant, user.token)).statusCode).toBe(403);
      const both = await proxy('POST', { from_marketplace: true, tunnel_token: 'x' }, user.tenant);
      expect(issueLocs(both)).toEqual(['body.from_marketplace']);
      expect(issueLocs(await proxy('POST', { from_marketplace: false }, user.tenant))).toEqual(['body.tunnel_token']);
      expect(issueLocs(await proxy('POST', { from_marketplace: 'yes' }, user.tenant))).toEqual(['body.from_marketplace']);
      expect(hub.tunnelCredentials.length).toBe(handedOut);
      expect(provider.requests).toHaveLength(0);
    });
  });
});

describe("the hub's tunnel credentials (HubClient.tunnelCredentials)", () => {
  const servers: ReturnType<typeof Bun.serve>[] = [];
  /** A hub that logs anyone in and answers the tunnel-credentials route with `answer`. */
  const hubAnswering = (answer: () => Response) => {
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (request) =>
        new URL(request.url).pathname === '/api/v1/auth/login' ? Response.json({ access_token: 'a', refresh_token: 'r' }) : answer(),
    });
    servers.push(server);
    const clients = new HubClients((sealed) => sealed);
    return clients.client({
      id: crypto.randomUUID(),
      name: 'Test hub',
      url: `http://127.0.0.1:${server.port}`,
      username: 'ada',
      password: 'pw',
    });
  };
  afterAll(async () => {
    for (const server of servers) await server.stop(true);
  });
  const failure = async (work: Promise<unknown>) => {
    const outcome = await work.then(
      () => undefined,
      (error: unknown) => error,
    );
    if (!(outcome instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(outcome)}`);
    return outcome;
  };

  test('the credential and its host, in lower case', async () => {
    const client = hubAnswering(() => Response.json({ auth_token: 'cred-1', domain: 'Ada.SyftHub.ngrok.app' }));
    expect(await client.tunnelCredentials()).toEqual({ authToken: 'cred-1', domain: 'ada.syfthub.ngrok.app' });
  });

  test('an answer without a token, or whose domain is not a host name, is a 502 that quotes nothing of it', async () => {
    for (const body of [
      { domain: 'ada.syfthub.ngrok.app' },
      { auth_token: '', domain: 'ada.syfthub.ngrok.app' },
      { auth_token: 'cred-secret', domain: 'https://ada.syfthub.ngrok.app/x' },
      { auth_token: 'cred-secret', domain: 'localhost' },
      { auth_token: 'cred-secret' },
    ]) {
      const error = await failure(hubAnswering(() => Response.json(body)).tunnelCredentials());
      expect({ kind: error.kind, detail: error.detail }).toEqual({
        kind: 'upstream',
        detail: "Marketplace 'Test hub' answered without a usable tunnel credential (auth_token and domain)",
      });
    }
  });

  test("a hub without the route is a 502; the hub's JSON reason is said, an HTML page is not (issue 22, item 2)", async () => {
    const old = await failure(hubAnswering(() => Response.json({ detail: 'Not Found' }, { status: 404 })).tunnelCredentials());
    expect({ kind: old.kind, detail: old.detail }).toEqual({
      kind: 'upstream',
      detail: "Marketplace 'Test hub' does not offer tunnel credentials (404: Not Found): start the tunnel with an ngrok authtoken instead",
    });
    const page = `<html><body>${'Bad gateway. '.repeat(200)}</body></html>`;
    const long = await failure(hubAnswering(() => new Response(page, { status: 504 })).tunnelCredentials());
    expect(long.kind).toBe('upstream');
    expect(long.detail.length).toBeLessThan(240);
    expect(long.detail).toBe("Marketplace 'Test hub' could not get a tunnel credential from ngrok (504: Gateway Timeout)");
  });
});

describe('the ngrok provider', () => {
  test('its agent library loads here (no network is needed to know)', async () => {
    const { NgrokTunnelProvider } = await import('../src/tunnel/ngrok.ts');
    expect(await new NgrokTunnelProvider().available()).toBe(true);
  });
});
