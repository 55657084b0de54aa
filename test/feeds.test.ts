import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { type FakeItem, type FeedServer, startFeedServer } from './fakes/feed-server.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * The `rss` dataset type (issue 27, item 1) against a local https feed server (test/fakes/feed-server.ts):
 * items indexed with their title, link and date, edits re-indexed, 304 answered, oversize items skipped, a
 * redirect to http refused, an unreachable feed shown and retried, the window of newest items, and the
 * configuration's rules. The feed server's certificate is trusted through a test-only service option:
 * knode reads https feeds only, here as in production. Time moves by the app's clock, never by waiting.
 */

const HOUR = 60 * 60_000;

interface FileState {
  path: string;
  status: string;
  error: string | null;
  updated_at: string;
}

interface FeedState {
  url: string;
  polled_at: string | null;
  succeeded_at: string | null;
  error: string | null;
  items: number;
}

interface Hit {
  content: string;
  metadata: Record<string, unknown>;
}

let t: TestApp;
let server: FeedServer;
let owner: TestUser;

function item(n: number, extra: Partial<FakeItem> = {}): FakeItem {
  return {
    guid: `guid-${n}`,
    title: `Post number ${n}`,
    link: `https://blog.example/posts/${n}`,
    date: new Date(Date.UTC(2026, 0, n)),
    html: `<p>Item ${n} talks about <b>marmalade${n}</b> and toast.</p>`,
    ...extra,
  };
}

async function createFeedDataset(name: string, configuration: Record<string, unknown>, user = owner) {
  const response = await t.request({
    method: 'POST',
    url: '/api/v1/datasets/',
    token: user.token,
    payload: { name, dtype: 'rss', configuration },
  });
  return response;
}

async function create(name: string, configuration: Record<string, unknown>): Promise<string> {
  const response = await createFeedDataset(name, configuration);
  expect(response.statusCode).toBe(201);
  return response.json().id;
}

async function files(id: string): Promise<FileState[]> {
  return (await t.request({ method: 'GET', url: `/api/v1/datasets/${id}/files`, token: owner.token })).json();
}

async function feeds(id: string): Promise<FeedState[]> {
  return (await t.request({ method: 'GET', url: `/api/v1/datasets/${id}/feeds`, token: owner.token })).json();
}

async function search(id: string, query: string): Promise<Hit[]> {
  const response = await t.request({
    method: 'POST',
    url: `/api/v1/datasets/${id}/search`,
    token: owner.token,
    payload: { query, mode: 'keyword', limit: 20 },
  });
  expect(response.statusCode).toBe(200);
  return response.json().documents;
}

/** Waits until every file is settled (searchable, indexed, failed or removed) and `ready` holds. */
async function settled(id: string, ready: (rows: FileState[]) => boolean): Promise<FileState[]> {
  return waitFor(`the feed items of ${id}`, async () => {
    const rows = await files(id);
    return rows.every((row) => !['queued', 'indexing'].includes(row.status)) && ready(rows) ? rows : undefined;
  });
}

/** The user's access token, from a new login to `app`. */
async function logIn(app: TestApp, user: TestUser): Promise<string> {
  const login = await app.request({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } });
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.statusCode} ${login.body}`);
  return login.json().access_token;
}

/** Moves the app's clock on; a token lives an hour of that clock, so the owner logs in again. */
async function advance(ms: number): Promise<void> {
  t.clock.advance(ms);
  const token = await logIn(t, owner);
  owner = { ...owner, token, headers: { authorization: `Bearer ${token}` } };
}

/** Moves the clock an interval on and waits until every feed was polled again. */
async function nextPoll(id: string, ms = HOUR): Promise<FeedState[]> {
  const before = await feeds(id);
  await advance(ms);
  return waitFor('the next poll', async () => {
    const after = await feeds(id);
    return after.every((feed, index) => feed.polled_at !== before[index]?.polled_at) ? after : undefined;
  });
}

beforeAll(async () => {
  server = startFeedServer();
  t = await createTestApp({}, undefined, { feedTls: { ca: server.ca } });
  owner = await t.user('feeds');
});

afterAll(async () => {
  await t?.close();
  await server?.stop();
});

describe('rss datasets', () => {
  test('new items are indexed and found with their title, link and date; a 304 re-reads nothing', async () => {
    server.feed('/a.xml', 'rss', [item(1), item(2)]);
    const id = await create('news', { feeds: [`${server.origin}/a.xml`], interval: '1h' });
    const rows = await settled(id, (rows) => rows.length === 2);
    expect(rows.map((row) => row.path).sort()).toEqual(['guid-1', 'guid-2']);
    const hits = await search(id, 'marmalade2');
    expect(hits).toHaveLength(1);
    expect(hits[0]?.content).toContain('marmalade2');
    expect(hits[0]?.metadata).toMatchObject({
      title: 'Post number 2',
      url: 'https://blog.example/posts/2',
      source: 'https://blog.example/posts/2',
      published_at: '2026-01-02T00:00:00.000Z',
      file_type: 'rss',
      feed: `${server.origin}/a.xml`,
    });
    const [state] = await feeds(id);
    expect(state).toMatchObject({ url: `${server.origin}/a.xml`, error: null, items: 2 });

    // The next poll is a conditional GET: the server answers 304 and no item is queued again.
    const updated = new Map(rows.map((row) => [row.path, row.updated_at]));
    const [after] = await nextPoll(id);
    expect(after?.error).toBeNull();
    expect(server.answers('/a.xml')).toEqual([200, 304]);
    for (const row of await files(id)) expect(row.updated_at).toBe(updated.get(row.path) as string);
  });

  test('an edited item (same guid, new text or date) is indexed again; an Atom feed reads the same', async () => {
    server.feed('/atom.xml', 'atom', [item(3), item(4)]);
    const id = await create('atom news', { feeds: [`${server.origin}/atom.xml`], interval: '15m' });
    await settled(id, (rows) => rows.length === 2 && rows.every((row) => row.status !== 'queued'));
    expect((await search(id, 'marmalade3'))[0]?.metadata).toMatchObject({
      title: 'Post number 3',
      published_at: '2026-01-03T00:00:00.000Z',
    });

    server.feed('/atom.xml', 'atom', [
      item(3, { html: '<p>Now about quince jelly.</p>' }),
      item(4, { date: new Date(Date.UTC(2026, 1, 4)) }),
    ]);
    await nextPoll(id, 15 * 60_000);
    await waitFor('the edit to be searchable', async () => (await search(id, 'quince')).length === 1);
    expect(await search(id, 'marmalade3')).toHaveLength(0);
    await waitFor('the new date', async () => (await search(id, 'marmalade4'))[0]?.metadata.published_at === '2026-02-04T00:00:00.000Z');
  });

  test('an item over 1 MB is skipped with its reason; the others are indexed', async () => {
    const big = `<p>${'x'.repeat(1024 * 1024 + 10)}</p>`;
    server.feed('/big.xml', 'rss', [item(5), item(6, { html: big })]);
    const id = await create('big items', { feeds: [`${server.origin}/big.xml`] });
    const rows = await settled(id, (rows) => rows.length === 2);
    const failed = rows.find((row) => row.path === 'guid-6');
    expect(failed?.status).toBe('failed');
    expect(failed?.error).toContain('over the 1 MB a feed item may be');
    expect(rows.find((row) => row.path === 'guid-5')?.status).not.toBe('failed');
  });

  test('a redirect to http is refused and shown on the feed; an https redirect is followed', async () => {
    server.redirect('/moved.xml', `${server.origin.replace('https:', 'http:')}/a.xml`);
    server.feed('/target.xml', 'rss', [item(7)]);
    server.redirect('/hop.xml', `${server.origin}/target.xml`, 302);
    const id = await create('redirects', { feeds: [`${server.origin}/moved.xml`, `${server.origin}/hop.xml`] });
    const states = await waitFor('both feeds polled', async () => {
      const states = await feeds(id);
      return states.length === 2 && states.every((state) => state.polled_at) ? states : undefined;
    });
    const moved = states.find((state) => state.url.endsWith('/moved.xml'));
    expect(moved?.error).toContain('only https feeds are read');
    expect(states.find((state) => state.url.endsWith('/hop.xml'))?.error).toBeNull();
    await settled(id, (rows) => rows.length === 1 && rows[0]?.path === 'guid-7');
  });

  test('an unreachable feed is shown with its reason and read at the next poll', async () => {
    server.fail('/down.xml', 503);
    const id = await create('flaky', { feeds: [`${server.origin}/down.xml`], interval: '6h' });
    const [down] = await waitFor('the failed poll', async () => {
      const states = await feeds(id);
      return states[0]?.error ? states : undefined;
    });
    expect(down?.error).toContain('503');
    expect(down?.succeeded_at).toBeNull();
    server.feed('/down.xml', 'rss', [item(8)]);
    const [up] = await nextPoll(id, 6 * HOUR);
    expect(up?.error).toBeNull();
    await settled(id, (rows) => rows.length === 1);
    expect(await search(id, 'marmalade8')).toHaveLength(1);
  });

  test('only the newest items of the window are kept; older ones leave the index', async () => {
    server.feed('/many.xml', 'rss', [item(10), item(11), item(12), item(13)]);
    const id = await create('window', { feeds: [`${server.origin}/many.xml`], maxItems: 3 });
    let rows = await settled(id, (rows) => rows.length === 3);
    expect(rows.map((row) => row.path).sort()).toEqual(['guid-11', 'guid-12', 'guid-13']);
    server.feed('/many.xml', 'rss', [item(12), item(13), item(14)]);
    await nextPoll(id);
    rows = await settled(id, (rows) => rows.some((row) => row.path === 'guid-14'));
    const live = rows.filter((row) => row.status !== 'removed').map((row) => row.path);
    expect(live.sort()).toEqual(['guid-12', 'guid-13', 'guid-14']);
    expect(rows.find((row) => row.path === 'guid-11')?.status).toBe('removed');
    expect(await search(id, 'marmalade11')).toHaveLength(0);
    expect((await feeds(id))[0]?.items).toBe(3);
  });

  test('a stopped dataset polls nothing; started again it polls, and a reindex reads the kept items again', async () => {
    server.feed('/paused.xml', 'rss', [item(30)]);
    const id = await create('paused', { feeds: [`${server.origin}/paused.xml`] });
    await settled(id, (rows) => rows.length === 1);
    const stop = await t.request({ method: 'POST', url: `/api/v1/datasets/${id}/stop`, token: owner.token });
    expect(stop.statusCode).toBe(200);
    server.feed('/paused.xml', 'rss', [item(30), item(31)]);
    await advance(2 * HOUR);
    await Bun.sleep(300);
    expect(server.answers('/paused.xml')).toEqual([200]);
    expect(await files(id)).toHaveLength(1);

    await t.request({ method: 'POST', url: `/api/v1/datasets/${id}/start`, token: owner.token });
    await settled(id, (rows) => rows.length === 2);
    expect(server.answers('/paused.xml')).toEqual([200, 200]);
    const reindex = await t.request({ method: 'POST', url: `/api/v1/datasets/${id}/reindex`, token: owner.token });
    expect(reindex.statusCode).toBe(202);
    await settled(id, (rows) => rows.length === 2);
    expect(await search(id, 'marmalade31')).toHaveLength(1);
  });
});

describe('rss datasets across a restart', () => {
  test('the poller resumes on its interval from the last poll, and the items stay found', async () => {
    server.feed('/restart.xml', 'rss', [item(40)]);
    const first = await createTestApp({}, undefined, { feedTls: { ca: server.ca } });
    const user = await first.user('restarter');
    const created = await first.request({
      method: 'POST',
      url: '/api/v1/datasets/',
      token: user.token,
      payload: { name: 'kept', dtype: 'rss', configuration: { feeds: [`${server.origin}/restart.xml`] } },
    });
    const id = created.json().id;
    await waitFor('the first item', async () => {
      const rows = (await first.request({ method: 'GET', url: `/api/v1/datasets/${id}/files`, token: user.token })).json();
      return rows.length === 1 && rows[0].status === 'indexed';
    });
    await first.close({ keepData: true });

    const again = await createTestApp({}, first.dataDir, { clock: first.clock, feedTls: { ca: server.ca } });
    try {
      await Bun.sleep(300);
      expect(server.answers('/restart.xml')).toEqual([200]); // not due yet: polled an interval after the last poll
      again.clock.advance(HOUR);
      await waitFor('the poll after the restart', async () => server.answers('/restart.xml').length === 2);
      expect(server.answers('/restart.xml')).toEqual([200, 304]);
      const hits = await again.request({
        method: 'POST',
        url: `/api/v1/datasets/${id}/search`,
        token: await logIn(again, user), // after the hour: the token from before has expired
        payload: { query: 'marmalade40', mode: 'keyword' },
      });
      expect(hits.json().documents[0]?.metadata.title).toBe('Post number 40');
    } finally {
      await again.close();
    }
  });
});

describe('rss configuration', () => {
  test('a non-https feed, an unknown interval or no feed at all is a 422 naming the field', async () => {
    const http = await createFeedDataset('plain http', { feeds: ['http://example.com/feed.xml'] });
    expect(http.statusCode).toBe(422);
    expect(JSON.stringify(http.json())).toContain('feeds');
    const interval = await createFeedDataset('bad interval', { feeds: ['https://example.com/feed.xml'], interval: '5m' });
    expect(interval.statusCode).toBe(422);
    expect(JSON.stringify(interval.json())).toContain('interval');
    const none = await createFeedDataset('no feeds', { feeds: [] });
    expect(none.statusCode).toBe(422);
    const window = await createFeedDataset('huge window', { feeds: ['https://example.com/feed.xml'], maxItems: 5001 });
    expect(window.statusCode).toBe(422);
  });

  test('a loopback feed is refused where outbound calls to loopback are not allowed', async () => {
    const strict = await createTestApp({ SVC_OUTBOUND_ALLOW: '' });
    try {
      await strict.user('first'); // the first owner may call loopback; a second tenant may not
      const user = await strict.user('second');
      const response = await strict.request({
        method: 'POST',
        url: '/api/v1/datasets/',
        token: user.token,
        payload: { name: 'local', dtype: 'rss', configuration: { feeds: ['https://127.0.0.1:8443/feed.xml'] } },
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().detail[0]).toMatchObject({ loc: ['body', 'configuration', 'feeds', 0], type: 'url_refused' });
    } finally {
      await strict.close();
    }
  });

  test('the feeds route needs credentials, and another tenant sees 404', async () => {
    server.feed('/private.xml', 'rss', [item(20)]);
    const id = await create('private', { feeds: [`${server.origin}/private.xml`] });
    expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${id}/feeds` })).statusCode).toBe(401);
    const other = await t.user('othertenant');
    expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${id}/feeds`, token: other.token })).statusCode).toBe(404);
    expect((await t.request({ method: 'GET', url: `/api/v1/datasets/${id}`, token: other.token })).statusCode).toBe(404);
  });

  test('GET /api/v1/types offers the rss type with its feeds and intervals', async () => {
    const types = (await t.request({ method: 'GET', url: '/api/v1/types', token: owner.token })).json();
    const text = JSON.stringify(types);
    expect(text).toContain('"rss"');
    expect(text).toContain('"15m"');
  });
});
