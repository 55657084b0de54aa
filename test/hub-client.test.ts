import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { hubEndpoint, hubTags } from '../src/syfthub/endpoint-metadata.ts';
import { HubClients } from '../src/syfthub/hub-client.ts';
import { HubAnswerError, HubUnavailableError } from '../src/syfthub/hub-errors.ts';
import { HUB_TIMEOUT_MS, LOGIN_RETRY_MS } from '../src/syfthub/hub-session.ts';
import { ExpiringCache } from '../src/util/expiring-cache.ts';
import { ManualClock } from './fakes/clock.ts';
import { type FakeSyftHub, startFakeSyftHub } from './fakes/syfthub.ts';

/** Stored marketplaces of these tests keep their password in clear: the "secret box" is the identity. */
const clients = (timeoutMs = HUB_TIMEOUT_MS, clock = new ManualClock()) => new HubClients((sealed) => sealed, timeoutMs, clock);
const account = (url: string, password = 'the-hub-password') => ({
  id: crypto.randomUUID(),
  name: 'Test hub',
  url,
  username: 'owner',
  password,
});

async function failure(work: Promise<unknown>): Promise<Error> {
  try {
    await work;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

describe('hub sessions', () => {
  let hub: FakeSyftHub;
  beforeAll(async () => {
    hub = await startFakeSyftHub();
    hub.addUser({ username: 'owner', email: 'owner@hub.example', password: 'the-hub-password' });
  });
  afterAll(() => hub.close());

  test('concurrent first requests share one login; concurrent 401s share one refresh', async () => {
    const client = clients().client(account(hub.url));
    const logins = hub.logins;
    await Promise.all(Array.from({ length: 20 }, () => client.setDomain('https://one.example')));
    expect(hub.logins - logins).toBe(1);
    const refreshes = hub.refreshes;
    hub.expireSessions();
    await Promise.all(Array.from({ length: 20 }, () => client.setDomain('https://two.example')));
    expect(hub.refreshes - refreshes).toBe(1);
    expect(hub.logins - logins).toBe(1);
  });

  test('stored credentials the hub refuses are a 502, and a failed login is not retried for a while', async () => {
    const clock = new ManualClock();
    const client = clients(HUB_TIMEOUT_MS, clock).client(account(hub.url, 'a-stale-password'));
    const logins = hub.logins;
    for (let i = 0; i < 5; i++) {
      const error = await failure(client.setDomain(null));
      expect((error as HubAnswerError).kind).toBe('upstream');
      expect((error as HubAnswerError).detail).toBe(
        "Marketplace 'Test hub' refused the credentials of 'owner': Incorrect username or password",
      );
      clock.advance(LOGIN_RETRY_MS / 10);
    }
    expect(hub.logins - logins).toBe(1);
    clock.advance(LOGIN_RETRY_MS / 2); // the pause is over: the next request logs in again
    await failure(client.setDomain(null));
    expect(hub.logins - logins).toBe(2);
  });

  test('the same marketplace gets the same session until its credentials change', async () => {
    const hubs = clients();
    const stored = account(hub.url);
    expect(hubs.client(stored)).toBe(hubs.client({ ...stored, name: 'renamed' }));
    expect(hubs.client({ ...stored, password: 'other-password' })).not.toBe(hubs.client(stored));
  });

  test('a closed registry aborts what is in flight and refuses new work', async () => {
    const hubs = clients();
    const client = hubs.client(account(hub.url));
    hubs.close();
    const error = await failure(client.setDomain(null));
    expect(error).toBeInstanceOf(HubUnavailableError);
    expect((error as HubUnavailableError).detail).toContain('cancelled');
  });
});

describe('hub errors', () => {
  const servers: ReturnType<typeof Bun.serve>[] = [];
  const serve = (fetch: (request: Request) => Response | Promise<Response>) => {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch });
    servers.push(server);
    return `http://127.0.0.1:${server.port}`;
  };
  afterAll(async () => {
    for (const server of servers) await server.stop(true);
  });

  test('a hub that repeats the password or our session token back has them masked in every message', async () => {
    const url = serve(async (request) => {
      const path = new URL(request.url).pathname;
      if (path === '/api/v1/auth/login') {
        const form = new URLSearchParams(await request.text());
        if (form.get('password') === 'the-hub-password')
          return Response.json({ access_token: 'secret-session-token', refresh_token: 'secret-refresh-token' });
        return Response.json({ detail: `password ${form.get('password')} is wrong` }, { status: 401 });
      }
      return Response.json({ detail: `token ${request.headers.get('authorization')} cannot do that` }, { status: 403 });
    });
    const refused = await failure(clients().connect('m', account(url, 'wrong-password-here')));
    expect((refused as HubAnswerError).kind).toBe('bad_request');
    expect((refused as HubAnswerError).detail).toBe(
      "Marketplace 'Test hub' refused the credentials of 'owner': password ******** is wrong",
    );
    const forbidden = await failure(clients().client(account(url)).setDomain('https://x.example'));
    expect((forbidden as HubAnswerError).kind).toBe('upstream');
    expect((forbidden as HubAnswerError).detail).toBe(
      "Marketplace 'Test hub' refused to set the public URL (403): token Bearer ******** cannot do that",
    );
  });

  test('a redirect is reported, not followed (it would carry the session elsewhere)', async () => {
    const url = serve(() => new Response(null, { status: 307, headers: { location: 'https://elsewhere.example/api/v1/auth/login' } }));
    const error = await failure(clients().connect('m', account(url)));
    expect(error).toBeInstanceOf(HubAnswerError);
    expect((error as HubAnswerError).detail).toBe(
      "Marketplace 'Test hub' redirects to https://elsewhere.example/api/v1/auth/login: configure the marketplace with that URL",
    );
  });

  test('a hub that does not answer in time is unavailable (503)', async () => {
    // Real time is the point here: the client's own timeout (100 ms) runs out while the hub says nothing.
    const url = serve(() => new Promise<Response>((resolve) => setTimeout(() => resolve(Response.json({})), 2_000)));
    const error = await failure(clients(100).connect('m', account(url)));
    expect(error).toBeInstanceOf(HubUnavailableError);
    expect((error as HubUnavailableError).detail).toBe(`Marketplace 'Test hub' at ${url} cannot be reached: no answer within 100 ms`);
  });

  test('validation errors of the hub are quoted readably', async () => {
    const url = serve(async (request) => {
      if (new URL(request.url).pathname === '/api/v1/auth/login') return Response.json({ access_token: 'a', refresh_token: 'r' });
      return Response.json({ detail: [{ loc: ['body', 'domain'], msg: 'Invalid domain', type: 'value_error' }] }, { status: 422 });
    });
    const error = await failure(clients().client(account(url)).setDomain('https://x.example'));
    expect((error as HubAnswerError).detail).toBe(
      "Marketplace 'Test hub' refused to set the public URL (422): body.domain: Invalid domain",
    );
  });
});

describe('endpoint metadata', () => {
  const endpoint = { name: 'n', slug: 'my-ep', summary: '', description: 'd', dataset_id: null, model_id: null, tags: '' };

  test('the description is the summary cut to 500 characters, never inside a character', () => {
    const summary = `${'x'.repeat(499)}😀😀`;
    expect(hubEndpoint({ ...endpoint, summary }, []).description).toBe(`${'x'.repeat(499)}😀`);
    expect(hubEndpoint({ ...endpoint, summary: 'short' }, []).description).toBe('short');
  });

  test('the type is derived from the links', () => {
    expect(hubEndpoint({ ...endpoint, dataset_id: 'd', model_id: 'm' }, []).type).toBe('model_data_source');
    expect(hubEndpoint({ ...endpoint, model_id: 'm' }, []).type).toBe('model');
    expect(hubEndpoint({ ...endpoint, dataset_id: 'd' }, []).type).toBe('data_source');
  });

  test('tags are cleaned as the hub would have them: at most 10, never a reason to refuse the endpoint', () => {
    expect(hubTags('')).toEqual([]);
    expect(hubTags(' Legal , LEGAL,law-2026,,  ')).toEqual(['legal', 'law-2026']);
    // Refused by the hub's rule: other characters, an edge or double hyphen, more than 30 characters.
    expect(hubTags(`a_b,-x,y-,c--d,é,ok,${'x'.repeat(31)},${'y'.repeat(30)}`)).toEqual(['ok', 'y'.repeat(30)]);
    expect(hubTags(Array.from({ length: 12 }, (_, i) => `t${i}`).join(','))).toEqual(Array.from({ length: 10 }, (_, i) => `t${i}`));
    expect(hubEndpoint({ ...endpoint, tags: 'One,two' }, []).tags).toEqual(['one', 'two']);
  });
});

describe('verification cache', () => {
  test('entries lapse at their time, and the cache never grows past its bound', () => {
    let now = 1000;
    const cache = new ExpiringCache<string>(3, () => now);
    cache.set('a', 'A', 2000);
    cache.set('gone', 'G', 999);
    expect(cache.get('gone')).toBeUndefined();
    expect(cache.get('a')).toBe('A');
    cache.set('b', 'B', 5000);
    cache.set('c', 'C', 5000);
    cache.set('d', 'D', 5000);
    expect(cache.size).toBe(3);
    expect(cache.get('a')).toBeUndefined(); // the oldest made room
    now = 2500;
    expect(cache.get('b')).toBe('B');
    now = 5000;
    expect(cache.get('b')).toBeUndefined();
  });
});
