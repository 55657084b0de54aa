import { type Kysely, sql } from 'kysely';

/**
 * SQLite's migration 0019 (the `rss` dataset type, which says what each column is): each feed's state and the
 * items kept of a dataset's feeds. Keys and timestamps compare by their bytes (COLLATE "C") as in SQLite.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE feed_sources (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      url TEXT COLLATE "C" NOT NULL,
      etag TEXT,
      last_modified TEXT,
      polled_at TEXT COLLATE "C",
      succeeded_at TEXT COLLATE "C",
      error TEXT,
      items BIGINT NOT NULL DEFAULT 0,
      PRIMARY KEY (dataset_id, url)
    )`.execute(db);
  await sql`
    CREATE TABLE feed_items (
      dataset_id TEXT NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
      item_key TEXT COLLATE "C" NOT NULL,
      feed_url TEXT COLLATE "C" NOT NULL,
      title TEXT NOT NULL,
      link TEXT,
      published_at TEXT COLLATE "C",
      html TEXT NOT NULL,
      error TEXT,
      content_hash TEXT NOT NULL,
      revision BIGINT NOT NULL DEFAULT 1,
      first_seen_at TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (dataset_id, item_key)
    )`.execute(db);
}
