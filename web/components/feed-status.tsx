import { useEffect, useState } from 'preact/hooks';
import { apiPath, get } from '../api.ts';
import { count, date } from '../lib/format.ts';
import type { Dataset, FeedState } from '../views.ts';
import { Empty, ErrorNotice } from './ui.tsx';

/**
 * The feeds of an `rss` dataset (GET /datasets/{id}/feeds): when each was last polled and read, how many of
 * its items are kept, and why its last poll failed (it is tried again at the next poll). Asked again when
 * the dataset's view is (its page polls it), so a poll that ends shows here without a timer of its own.
 */
export function FeedStatus(props: { dataset: Dataset }) {
  const [feeds, setFeeds] = useState<FeedState[] | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const { dataset } = props;

  useEffect(() => {
    let current = true;
    get<FeedState[]>(apiPath`/datasets/${dataset.id}/feeds`)
      .then((states) => {
        if (!current) return;
        setFeeds(states);
        setError(undefined);
      })
      .catch((caught) => current && setError(caught as Error));
    return () => {
      current = false;
    };
  }, [dataset.id, dataset.updated_at, dataset.ingestion.files_total, dataset.ingestion.files_pending]);

  const failing = feeds?.filter((feed) => feed.error).length ?? 0;
  return (
    <section class="card" aria-labelledby="feeds-title">
      <h2 id="feeds-title">Feeds</h2>
      <p>
        Polled {intervalLabel(dataset.configuration.interval)}; the newest {count(Number(dataset.configuration.maxItems ?? 5000))} items are
        kept.{failing > 0 ? ` ${failing} failing: tried again at the next poll.` : ''}
      </p>
      <ErrorNotice error={error} />
      {feeds === undefined || feeds.length === 0 ? (
        <Empty>{feeds === undefined ? 'Loading the feeds…' : 'Not polled yet.'}</Empty>
      ) : (
        <div class="table-scroll">
          <table class="table feeds">
            <caption class="visually-hidden">Feeds of the dataset and how their last poll went</caption>
            <thead>
              <tr>
                <th scope="col">Feed</th>
                <th scope="col">State</th>
                <th scope="col" class="num">
                  Items
                </th>
                <th scope="col">Last polled</th>
              </tr>
            </thead>
            <tbody>
              {feeds.map((feed) => (
                <FeedRow key={feed.url} feed={feed} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One feed: its URL (and why its last poll failed), its state, its items and when it was last polled. */
function FeedRow(props: { feed: FeedState }) {
  const { feed } = props;
  const state = feed.error ? 'failing' : feed.succeeded_at ? 'read' : 'waiting';
  // The file list's colours: failed, indexed, queued.
  const tone = feed.error ? 'failed' : feed.succeeded_at ? 'indexed' : 'queued';
  return (
    <tr class={feed.error ? 'row-bad' : undefined}>
      <td class="path">
        {feed.url}
        {feed.error && <div class="error-text">{feed.error}</div>}
      </td>
      <td>
        <span class={`state state-${tone}`}>{state}</span>
      </td>
      <td class="num">{count(feed.items)}</td>
      <td class="nowrap">{feed.polled_at ? date(feed.polled_at) : '–'}</td>
    </tr>
  );
}

const INTERVALS: Record<string, string> = { '15m': 'every 15 minutes', '1h': 'every hour', '6h': 'every 6 hours', '1d': 'daily' };

function intervalLabel(interval: unknown): string {
  return typeof interval === 'string' ? (INTERVALS[interval] ?? interval) : 'every hour';
}
