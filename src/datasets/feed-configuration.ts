import { checkConfiguration, type Issues } from '../http/issues.ts';
import type { Configuration } from '../security/secret-config.ts';
import type { DatasetConfiguration } from './codec.ts';
import { type CheckedRssConfiguration, RssConfigurationSchema } from './configuration-schema.ts';

/**
 * Checks an `rss` dataset's configuration (configuration-schema.ts: https feed URLs, an interval, a window of
 * items) and what no schema can say (chunkOverlap below chunkSize), and returns it with every default filled
 * in (422 with every problem otherwise). Whether knode may call a feed's host for the tenant is checked by the
 * service (a loopback feed only where SVC_OUTBOUND_ALLOW allows it), like an embedder's base_url.
 */
export function normalizeRssConfiguration(
  input: Configuration,
  collectionName: string,
  defaultEmbedder: string,
  checkEmbedder: (issues: Issues, embedder: string) => void,
): DatasetConfiguration {
  const checked = checkConfiguration(input, RssConfigurationSchema);
  const { issues } = checked;
  const value = checked.value as CheckedRssConfiguration;
  const { chunkSize, chunkOverlap } = value;
  if (!issues.has('chunkSize') && !issues.has('chunkOverlap') && chunkOverlap >= chunkSize) {
    issues.add('chunkOverlap', 'Must be smaller than chunkSize', 'less_than');
  }
  if (!issues.has('feeds')) {
    value.feeds.forEach((feed, index) => {
      if (!URL.canParse(feed)) issues.add(['feeds', index], `'${feed.slice(0, 200)}' is not a URL`, 'value_error');
    });
  }
  if (value.embedder !== undefined && !issues.has('embedder')) checkEmbedder(issues, value.embedder);
  issues.throwIfAny();
  return {
    ...input,
    feeds: value.feeds.map((feed) => new URL(feed).toString()),
    interval: value.interval,
    maxItems: value.maxItems,
    collectionName: value.collectionName ?? collectionName,
    embedder: value.embedder ?? defaultEmbedder,
    chunkSize,
    chunkOverlap,
    cost_per_query: value.cost_per_query,
  } as unknown as DatasetConfiguration;
}
