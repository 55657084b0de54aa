import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { DatasetRecord } from '../src/datasets/codec.ts';
import { DatasetRepository } from '../src/datasets/repository.ts';
import type { Db, OpenedDatabase } from '../src/db/database.ts';
import type { OpenedPostgres } from '../src/db/postgres/database.ts';
import { FeedRepository, type FoundItem } from '../src/feeds/feed-repository.ts';
import { SecretBox } from '../src/security/secret-box.ts';
import { TenantRepository } from '../src/tenants/repository.ts';
import { openPostgresAndSqlite, type PostgresAndSqlite } from './helpers/postgres.ts';

/**
 * The feeds' state and items (src/feeds/feed-repository.ts; SQLite migration 0019, PostgreSQL 0006) give the
 * same answers on both engines: the same calls on SQLite and on Debian's PostgreSQL, compared.
 */

let engines: PostgresAndSqlite;
let pg: OpenedPostgres;
let sqlite: OpenedDatabase;
const box = new SecretBox(Buffer.alloc(32, 9));
const AT = '2026-01-01T10:00:00.000Z';
const LATER = '2026-01-01T11:00:00.000Z';

beforeAll(async () => {
  engines = await openPostgresAndSqlite('knode-feeds-');
  ({ pg, sqlite } = engines);
});

afterAll(async () => {
  await engines?.close();
});

function found(key: string, extra: Partial<FoundItem> = {}): FoundItem {
  return {
    key,
    feedUrl: 'https://example.com/feed.xml',
    title: `Title ${key}`,
    link: `https://example.com/${key}`,
    publishedAt: '2026-01-02T00:00:00.000Z',
    html: `<p>${key}</p>`,
    error: null,
    contentHash: `hash-${key}`,
    ...extra,
  };
}

async function newRssDataset(db: Db): Promise<string> {
  const tenant = await new TenantRepository(db).create(`feeds-${crypto.randomUUID().slice(0, 8)}`);
  const record: DatasetRecord = {
    id: crypto.randomUUID(),
    tenant_id: tenant.id,
    name: 'feeds',
    summary: '',
    dtype: 'rss',
    configuration: { feeds: ['https://example.com/feed.xml'] } as unknown as DatasetRecord['configuration'],
    status: 'stopped',
    error: null,
    created_at: AT,
    updated_at: AT,
  };
  await new DatasetRepository(db, box).insert(record);
  return record.id;
}

/** The same calls on one engine, and what they answered. */
async function exercise(db: Db): Promise<unknown[]> {
  const feeds = new FeedRepository(db);
  const id = await newRssDataset(db);
  const seen: unknown[] = [];
  await feeds.ensureSources(id, ['https://example.com/feed.xml', 'https://example.org/atom.xml']);
  await feeds.polled(id, 'https://example.com/feed.xml', AT, { etag: '"v1"', lastModified: 'Thu, 01 Jan 2026 10:00:00 GMT' });
  await feeds.failed(id, 'https://example.org/atom.xml', AT, 'example.org answered 503 Service Unavailable');
  seen.push((await feeds.sources(id)).map(({ dataset_id, ...source }) => source));
  seen.push([...(await feeds.keep(id, [found('a'), found('b', { publishedAt: null }), found('c')], AT)).entries()]);
  // An edit raises the revision; an unchanged item is not written again.
  seen.push([...(await feeds.keep(id, [found('a', { html: '<p>edited</p>', contentHash: 'hash-a2' })], LATER)).entries()]);
  seen.push([...(await feeds.itemHashes(id)).entries()].sort());
  seen.push(await feeds.item(id, 'a'));
  await feeds.forget(id, ['c']);
  await feeds.countItems(id);
  seen.push(await feeds.states(id));
  // Dropped from the configuration: its row goes; the dataset's deletion takes the rest.
  await feeds.ensureSources(id, ['https://example.com/feed.xml']);
  seen.push((await feeds.sources(id)).map((source) => source.url));
  await db.deleteFrom('datasets').where('id', '=', id).execute();
  seen.push(await feeds.sources(id), await feeds.itemHashes(id));
  return seen;
}

describe('feed state on both engines', () => {
  test('the same calls give the same answers on SQLite and PostgreSQL', async () => {
    const onSqlite = await exercise(sqlite.db);
    const onPostgres = await exercise(pg.db);
    expect(onPostgres).toEqual(onSqlite);
    expect(onSqlite[2]).toEqual([['a', 2]]);
    expect(onSqlite[5]).toEqual([
      { url: 'https://example.com/feed.xml', polled_at: AT, succeeded_at: AT, error: null, items: 2 },
      {
        url: 'https://example.org/atom.xml',
        polled_at: AT,
        succeeded_at: null,
        error: 'example.org answered 503 Service Unavailable',
        items: 0,
      },
    ]);
    expect(onSqlite.at(-1)).toEqual(new Map());
  });
});
