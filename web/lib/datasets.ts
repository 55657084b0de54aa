import type { Dataset } from '../views.ts';

/** Where a dataset's documents come from, as its list row and page say: a folder's path, or the feeds it reads. */
export function datasetSource(dataset: Dataset): string {
  const feeds = dataset.configuration.feeds;
  if (Array.isArray(feeds)) return feeds.length === 1 ? String(feeds[0]) : `${feeds.length} feeds`;
  return String(dataset.configuration.ingestionPath ?? '');
}
