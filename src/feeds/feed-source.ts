import type { Logger } from 'pino';
import type { KeyedDocument, KeyedQueue, KeyedSourceHandle, KeyedSources } from '../ingestion/keyed-sources.ts';
import type { IngestedDataset } from '../ingestion/ports.ts';
import { ONE_MEGABYTE, type OutboundFetch, outboundFetch } from '../outbound/fetch.ts';
import type { OutboundPolicy } from '../outbound/reach.ts';
import type { Clock } from '../util/clock.ts';
import { ITEM_DOCUMENT_NAME, itemDocument, itemMetadata } from './feed-document.ts';
import { FeedPoller } from './feed-poller.ts';
import type { FeedRepository } from './feed-repository.ts';

/** How often each interval a dataset may choose polls (API-CONTRACT 4, `rss`). */
const FEED_INTERVAL_MS: Readonly<Record<string, number>> = {
  '15m': 15 * 60_000,
  '1h': 60 * 60_000,
  '6h': 6 * 60 * 60_000,
  '1d': 24 * 60 * 60_000,
};

/** The newest items a dataset keeps unless its `maxItems` says fewer (issue 27: "a window of the newest 5,000 items"). */
const FEED_WINDOW = 5_000;

/**
 * The most of a feed document read: 5,000 items of about 3 KB each. Past it the feed fails with the reason
 * (outbound/fetch.ts stops reading there); an item alone may be 1 MB (feed-poller.ts). The document is read on
 * the main thread (feed-xml.ts): 10 MB of RSS (5,000 items of 2 KB) took 60 to 150 ms here, so 16 MB holds
 * the event loop a quarter of a second at worst, once per poll.
 */
const FEED_MAX_BYTES = 16 * ONE_MEGABYTE;

const encoder = new TextEncoder();

export interface FeedSourcesDeps {
  readonly repository: FeedRepository;
  readonly outbound: OutboundPolicy;
  readonly clock: Clock;
  readonly log: Logger;
  /** Test-only (services.ts ServiceOptions): the authority a local https feed server's certificate is trusted through. */
  readonly tls?: { readonly ca: string };
}

/**
 * The `rss` datasets' side of ingestion (ingestion/keyed-sources.ts): a poller per running dataset keeps its
 * queue equal to its feeds' newest items, and a claimed item is handed over as a small HTML document with the
 * metadata answers cite. Feeds are called through the outbound module with the tenant's reach (loopback only
 * where SVC_OUTBOUND_ALLOW or the first owner allows it), https only at every hop.
 */
export class FeedSources implements KeyedSources {
  constructor(private readonly deps: FeedSourcesDeps) {}

  handles(dtype: string): boolean {
    return dtype === 'rss';
  }

  async open(dataset: IngestedDataset, queue: KeyedQueue): Promise<KeyedSourceHandle> {
    const { configuration } = dataset;
    const urls = Array.isArray(configuration.feeds) ? configuration.feeds.filter((url): url is string => typeof url === 'string') : [];
    const interval = typeof configuration.interval === 'string' ? configuration.interval : '1h';
    const window = typeof configuration.maxItems === 'number' ? configuration.maxItems : FEED_WINDOW;
    const poller = new FeedPoller(
      {
        datasetId: dataset.id,
        tenantId: dataset.tenant_id,
        urls,
        intervalMs: FEED_INTERVAL_MS[interval] ?? FEED_INTERVAL_MS['1h'] ?? 0,
        window,
      },
      queue,
      {
        repository: this.deps.repository,
        clock: this.deps.clock,
        log: this.deps.log,
        fetchFor: (tenantId) => this.fetchFor(tenantId),
        ...(this.deps.tls ? { tls: this.deps.tls } : {}),
      },
    );
    await poller.start();
    return poller;
  }

  async read(datasetId: string, key: string): Promise<KeyedDocument> {
    const item = await this.deps.repository.item(datasetId, key);
    if (!item) throw new Error('the item is no longer kept (it left the feed window)');
    if (item.error) throw new Error(item.error);
    const fields = { title: item.title, link: item.link, publishedAt: item.published_at, html: item.html, feedUrl: item.feed_url };
    return { name: ITEM_DOCUMENT_NAME, bytes: encoder.encode(itemDocument(fields)), metadata: itemMetadata(fields) };
  }

  private async fetchFor(tenantId: string): Promise<OutboundFetch> {
    const reach = await this.deps.outbound.forTenant(tenantId);
    return outboundFetch(reach, { maxBytes: FEED_MAX_BYTES, redirect: 'manual' });
  }
}
