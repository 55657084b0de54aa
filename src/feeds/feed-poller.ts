import type { Logger } from 'pino';
import type { KeyedEntry, KeyedQueue } from '../ingestion/keyed-sources.ts';
import type { OutboundFetch } from '../outbound/fetch.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { itemDocument } from './feed-document.ts';
import { FeedFetchError, fetchFeed } from './feed-fetch.ts';
import { type FeedItem, parseFeed } from './feed-items.ts';
import type { FeedRepository, FoundItem } from './feed-repository.ts';

/** The most of an item's HTML that is indexed (issue 27: "a 1 MB cap per item"); a longer item is skipped with the reason. */
const MAX_ITEM_BYTES = 1024 * 1024;

/** A running `rss` dataset's settings, as the poller needs them. */
export interface PolledFeeds {
  readonly datasetId: string;
  readonly tenantId: string;
  readonly urls: readonly string[];
  readonly intervalMs: number;
  /** How many items the dataset keeps: the newest, by date. */
  readonly window: number;
}

export interface FeedPollerDeps {
  readonly repository: FeedRepository;
  readonly clock: Clock;
  readonly log: Logger;
  /** The outbound fetch of the dataset's tenant, redirects left to the caller (outbound/fetch.ts `redirect: 'manual'`). */
  fetchFor(tenantId: string): Promise<OutboundFetch>;
  /** Test-only: the authority a local https feed server's certificate is trusted through. */
  readonly tls?: { readonly ca: string };
}

const encoder = new TextEncoder();

/**
 * Polls one running `rss` dataset's feeds, every interval from the end of the last poll (the first poll when
 * the last one is due, at once for a new dataset). A feed is fetched conditionally (feed-fetch.ts); its items
 * are compared with those kept, and the new and edited ones kept and queued; a feed that fails keeps its
 * reason on its row until a poll reads it again (each poll tries every feed). Then the window: items beyond
 * the dataset's newest `window` are forgotten and their documents removed, and an item of the feed older than
 * the window is not taken in (a feed that lists more items than the window would churn otherwise).
 */
export class FeedPoller {
  private readonly controller = new AbortController();
  private cancelTimer: (() => void) | undefined;
  private polling: Promise<void> | undefined;

  constructor(
    private readonly feeds: PolledFeeds,
    private readonly queue: KeyedQueue,
    private readonly deps: FeedPollerDeps,
  ) {}

  /** Schedules the first poll: when the last one (before a restart) is an interval old, at once for a new dataset. */
  async start(): Promise<void> {
    const { repository, clock } = this.deps;
    await repository.ensureSources(this.feeds.datasetId, this.feeds.urls);
    const sources = await repository.sources(this.feeds.datasetId);
    const last = Math.min(...sources.map((source) => (source.polled_at ? Date.parse(source.polled_at) : Number.NEGATIVE_INFINITY)));
    this.schedule(Number.isFinite(last) ? Math.max(0, last + this.feeds.intervalMs - clock.now()) : 0);
  }

  /** Stops polling; a poll in progress is cancelled and waited for. */
  async close(): Promise<void> {
    this.controller.abort();
    this.cancelTimer?.();
    await this.polling;
  }

  private schedule(ms: number): void {
    if (this.stopped()) return;
    const poll = () => {
      this.polling = this.pollAll()
        .catch((error: unknown) => this.deps.log.error({ dataset: this.feeds.datasetId, err: error }, 'polling the feeds failed'))
        .finally(() => {
          this.polling = undefined;
          this.schedule(this.feeds.intervalMs);
        });
    };
    // A poll due now runs in the next turn (a clock a test moves by hand would otherwise hold it).
    if (ms <= 0) {
      const timer = setTimeout(poll, 0);
      this.cancelTimer = () => clearTimeout(timer);
    } else this.cancelTimer = this.deps.clock.after(ms, poll);
  }

  private stopped(): boolean {
    return this.controller.signal.aborted || this.queue.stopped();
  }

  /** One poll of every feed of the dataset, then the window. */
  private async pollAll(): Promise<void> {
    const { datasetId } = this.feeds;
    const { repository } = this.deps;
    const found = new Map<string, FoundItem>();
    for (const url of this.feeds.urls) {
      if (this.stopped()) return;
      const items = await this.pollFeed(url);
      for (const item of items ?? []) if (!found.has(item.key)) found.set(item.key, item);
    }
    if (this.stopped()) return;
    const kept = await repository.itemHashes(datasetId);
    const inWindow = this.window(found, kept);
    const changed = [...found.values()].filter((item) => inWindow.has(item.key) && kept.get(item.key)?.hash !== item.contentHash);
    const revisions = await repository.keep(datasetId, changed, isoNow(this.deps.clock));
    const entries: KeyedEntry[] = changed.map((item) => ({
      key: item.key,
      size: encoder.encode(item.html).byteLength,
      revision: revisions.get(item.key) ?? 1,
    }));
    const dropped = [...kept.keys()].filter((key) => !inWindow.has(key));
    if (this.stopped()) return;
    await this.queue.removed(dropped);
    await repository.forget(datasetId, dropped);
    await this.queue.changed(entries);
    await repository.countItems(datasetId);
    if (changed.length > 0 || dropped.length > 0) {
      this.deps.log.info({ dataset: datasetId, changed: changed.length, removed: dropped.length }, 'feed items queued');
    }
  }

  /** The keys of the newest `window` items among those kept and those found (by date; undated: when first seen, or now). */
  private window(found: ReadonlyMap<string, FoundItem>, kept: ReadonlyMap<string, { sortKey: string }>): Set<string> {
    const seenNow = isoNow(this.deps.clock);
    const dates = new Map<string, string>();
    for (const [key, item] of kept) dates.set(key, item.sortKey);
    for (const [key, item] of found) dates.set(key, item.publishedAt ?? dates.get(key) ?? seenNow);
    const newest = [...dates.entries()].sort(([keyA, a], [keyB, b]) => (a === b ? (keyA < keyB ? -1 : 1) : a < b ? 1 : -1));
    return new Set(newest.slice(0, this.feeds.window).map(([key]) => key));
  }

  /** Fetches and reads one feed; its row says how that went. Undefined when nothing new was read. */
  private async pollFeed(url: string): Promise<FoundItem[] | undefined> {
    const { repository, log, clock } = this.deps;
    const { datasetId, tenantId } = this.feeds;
    const at = isoNow(clock);
    const source = await repository.source(datasetId, url);
    try {
      const answer = await fetchFeed(
        url,
        { etag: source?.etag ?? null, lastModified: source?.last_modified ?? null },
        { fetch: await this.deps.fetchFor(tenantId), signal: this.controller.signal, ...(this.deps.tls ? { tls: this.deps.tls } : {}) },
      );
      if (answer.unchanged) {
        await repository.polled(datasetId, url, at, null);
        return undefined;
      }
      const items = parseFeed(answer.body, url).map((item) => foundItem(item, url));
      await repository.polled(datasetId, url, at, answer);
      return items;
    } catch (error) {
      if (this.controller.signal.aborted) return undefined;
      const reason =
        error instanceof FeedFetchError
          ? error.message
          : `the feed could not be read: ${error instanceof Error ? error.message : String(error)}`;
      log.warn({ dataset: datasetId, feed: url, reason }, 'feed poll failed; tried again at the next poll');
      await repository.failed(datasetId, url, at, reason);
      return undefined;
    }
  }
}

/** An item as kept: over the 1 MB an item may be, its HTML is dropped and the reason kept instead. */
function foundItem(item: FeedItem, feedUrl: string): FoundItem {
  const bytes = encoder.encode(item.html).byteLength;
  const error =
    bytes > MAX_ITEM_BYTES ? `the item is ${(bytes / MAX_ITEM_BYTES).toFixed(1)} MB, over the 1 MB a feed item may be: skipped` : null;
  const html = error ? '' : item.html;
  const document = itemDocument({ ...item, html });
  const contentHash = new Bun.CryptoHasher('sha256').update(error ?? document).digest('hex');
  return { key: item.key, feedUrl, title: item.title, link: item.link, publishedAt: item.publishedAt, html, error, contentHash };
}
