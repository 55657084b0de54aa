import { type Kysely, sql } from 'kysely';

/**
 * The `rss` dataset type (issue 27, item 1; API-CONTRACT 4, "rss"):
 * - `feed_sources`: one row per feed URL of a dataset: the validators of its last answer (`etag`,
 *   `last_modified`, sent back as a conditional GET), when it was last polled and last read, and why its last
 *   poll failed (`error`, null once one succeeds), with the number of its items kept.
 * - `feed_items`: the items kept of a dataset's feeds (the newest 5,000): the key the item is queued under in
 *   `dataset_files` (its guid, id or link), what answers cite (title, link, date), its HTML (empty when the item
 *   is over the 1 MB an item may be; `error` then says so), the hash of what is indexed and a `revision` bumped
 *   by every edit, which is what `dataset_files` sees change.
 * Plain tables: the same SQL on PostgreSQL (its migration 0006).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE feed_sources (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      url TEXT NOT NULL,
      etag TEXT,
      last_modified TEXT,
      polled_at TEXT,
      succeeded_at TEXT,
      error TEXT,
      items INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (dataset_id, url)
    )`.execute(db);
  await sql`
    CREATE TABLE feed_items (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      item_key TEXT NOT NULL,
      feed_url TEXT NOT NULL,
      title TEXT NOT NULL,
      link TEXT,
      published_at TEXT,
      html TEXT NOT NULL,
      error TEXT,
      content_hash TEXT NOT NULL,
      revision INTEGER NOT NULL DEFAULT 1,
      first_seen_at TEXT NOT NULL,
      PRIMARY KEY (dataset_id, item_key)
    )`.execute(db);
}
