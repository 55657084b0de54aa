import type { Kysely } from 'kysely';
import type { Db } from '../db/database.ts';
import { nextTurn } from '../util/next-turn.ts';

/** Items written in one transaction, as a folder's scan records its files (ingestion/folder-sync.ts). */
const KEEP_BATCH = 100;

/**
 * The state of a dataset's feeds and the items kept of them (migration 0019; PostgreSQL 0006). The tables
 * are this module's own: their row types are declared here and added to the database's for these queries.
 */

export interface FeedSourceTable {
  dataset_id: string;
  url: string;
  etag: string | null;
  last_modified: string | null;
  polled_at: string | null;
  succeeded_at: string | null;
  error: string | null;
  items: number;
}

interface FeedItemTable {
  dataset_id: string;
  item_key: string;
  feed_url: string;
  title: string;
  link: string | null;
  published_at: string | null;
  html: string;
  error: string | null;
  content_hash: string;
  revision: number;
  first_seen_at: string;
}

type FeedTables = {
  feed_sources: FeedSourceTable;
  feed_items: FeedItemTable;
};

/** An item as a poll found it, ready to be compared with what is kept. */
export interface FoundItem {
  readonly key: string;
  readonly feedUrl: string;
  readonly title: string;
  readonly link: string | null;
  readonly publishedAt: string | null;
  readonly html: string;
  readonly error: string | null;
  readonly contentHash: string;
}

export type KeptItem = Pick<FeedItemTable, 'item_key' | 'feed_url' | 'title' | 'link' | 'published_at' | 'html' | 'error' | 'revision'>;

export class FeedRepository {
  private readonly db: Kysely<FeedTables>;

  constructor(db: Db) {
    this.db = db.withTables<FeedTables>();
  }

  /** The dataset's feeds as configured: rows for new URLs are added, rows for URLs no longer listed dropped. */
  async ensureSources(datasetId: string, urls: readonly string[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const url of urls) {
        await trx
          .insertInto('feed_sources')
          .values({
            dataset_id: datasetId,
            url,
            etag: null,
            last_modified: null,
            polled_at: null,
            succeeded_at: null,
            error: null,
            items: 0,
          })
          .onConflict((oc) => oc.columns(['dataset_id', 'url']).doNothing())
          .execute();
      }
      if (urls.length > 0) await trx.deleteFrom('feed_sources').where('dataset_id', '=', datasetId).where('url', 'not in', urls).execute();
    });
  }

  /** How each feed of the dataset is doing, as the dataset's feeds route shows it. */
  async states(
    datasetId: string,
  ): Promise<{ url: string; polled_at: string | null; succeeded_at: string | null; error: string | null; items: number }[]> {
    const rows = await this.sources(datasetId);
    return rows.map((row) => ({
      url: row.url,
      polled_at: row.polled_at,
      succeeded_at: row.succeeded_at,
      error: row.error,
      items: Number(row.items),
    }));
  }

  async sources(datasetId: string): Promise<FeedSourceTable[]> {
    return this.db.selectFrom('feed_sources').selectAll().where('dataset_id', '=', datasetId).orderBy('url').execute();
  }

  async source(datasetId: string, url: string): Promise<FeedSourceTable | undefined> {
    return this.db.selectFrom('feed_sources').selectAll().where('dataset_id', '=', datasetId).where('url', '=', url).executeTakeFirst();
  }

  /** A poll read the feed (or was told it had not changed): its validators kept, its error cleared. */
  async polled(
    datasetId: string,
    url: string,
    at: string,
    validators: { etag: string | null; lastModified: string | null } | null,
  ): Promise<void> {
    await this.db
      .updateTable('feed_sources')
      .set({
        polled_at: at,
        succeeded_at: at,
        error: null,
        ...(validators ? { etag: validators.etag, last_modified: validators.lastModified } : {}),
      })
      .where('dataset_id', '=', datasetId)
      .where('url', '=', url)
      .execute();
  }

  /** A poll failed: the reason is shown until a poll succeeds. */
  async failed(datasetId: string, url: string, at: string, reason: string): Promise<void> {
    await this.db
      .updateTable('feed_sources')
      .set({ polled_at: at, error: reason })
      .where('dataset_id', '=', datasetId)
      .where('url', '=', url)
      .execute();
  }

  /** The items kept of the dataset, by key: what a poll compares its items with, and their date for the window. */
  async itemHashes(datasetId: string): Promise<Map<string, { hash: string; sortKey: string }>> {
    const rows = await this.db
      .selectFrom('feed_items')
      .select(['item_key', 'content_hash', 'published_at', 'first_seen_at'])
      .where('dataset_id', '=', datasetId)
      .execute();
    return new Map(rows.map((row) => [row.item_key, { hash: row.content_hash, sortKey: row.published_at ?? row.first_seen_at }]));
  }

  /**
   * Keeps the items a poll found new or edited, a transaction per batch with a turn of the event loop between
   * (a first poll of 5,000 items would otherwise hold the database in one); an edited item's revision goes up.
   * Returns each one's revision.
   */
  async keep(datasetId: string, items: readonly FoundItem[], at: string): Promise<Map<string, number>> {
    const revisions = new Map<string, number>();
    for (let start = 0; start < items.length; start += KEEP_BATCH) {
      if (start > 0) await nextTurn();
      await this.keepBatch(datasetId, items.slice(start, start + KEEP_BATCH), at, revisions);
    }
    return revisions;
  }

  private async keepBatch(datasetId: string, items: readonly FoundItem[], at: string, revisions: Map<string, number>): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const item of items) {
        const fields = {
          feed_url: item.feedUrl,
          title: item.title,
          link: item.link,
          published_at: item.publishedAt,
          html: item.html,
          error: item.error,
          content_hash: item.contentHash,
        };
        const row = await trx
          .insertInto('feed_items')
          .values({ dataset_id: datasetId, item_key: item.key, ...fields, revision: 1, first_seen_at: at })
          .onConflict((oc) =>
            oc.columns(['dataset_id', 'item_key']).doUpdateSet((eb) => ({ ...fields, revision: eb('feed_items.revision', '+', 1) })),
          )
          .returning('revision')
          .executeTakeFirstOrThrow();
        revisions.set(item.key, Number(row.revision));
      }
    });
  }

  async item(datasetId: string, key: string): Promise<KeptItem | undefined> {
    return this.db
      .selectFrom('feed_items')
      .select(['item_key', 'feed_url', 'title', 'link', 'published_at', 'html', 'error', 'revision'])
      .where('dataset_id', '=', datasetId)
      .where('item_key', '=', key)
      .executeTakeFirst();
  }

  async forget(datasetId: string, keys: readonly string[]): Promise<void> {
    for (let start = 0; start < keys.length; start += 500) {
      await this.db
        .deleteFrom('feed_items')
        .where('dataset_id', '=', datasetId)
        .where('item_key', 'in', keys.slice(start, start + 500))
        .execute();
    }
  }

  /** Each feed's count of kept items, written to its row (shown per feed). */
  async countItems(datasetId: string): Promise<void> {
    const rows = await this.db
      .selectFrom('feed_items')
      .select(['feed_url', (eb) => eb.fn.countAll<number>().as('count')])
      .where('dataset_id', '=', datasetId)
      .groupBy('feed_url')
      .execute();
    const counts = new Map(rows.map((row) => [row.feed_url, Number(row.count)]));
    for (const source of await this.sources(datasetId)) {
      const items = counts.get(source.url) ?? 0;
      if (Number(source.items) !== items) {
        await this.db
          .updateTable('feed_sources')
          .set({ items })
          .where('dataset_id', '=', datasetId)
          .where('url', '=', source.url)
          .execute();
      }
    }
  }
}
