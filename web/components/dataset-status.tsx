import type { Dataset } from '../views.ts';
import { Badge } from './ui.tsx';

/** A dataset's state in one word: indexing while files wait, else its status. */
export function DatasetStatus(props: { dataset: Dataset }) {
  const { status, ingestion } = props.dataset;
  if (status === 'error') return <Badge tone="bad">error</Badge>;
  if (status === 'stopped') return <Badge tone="muted">stopped</Badge>;
  if (status === 'starting') return <Badge tone="busy">starting</Badge>;
  if (ingestion.files_pending > 0) return <Badge tone="busy">indexing</Badge>;
  if (ingestion.files_failed > 0) return <Badge tone="neutral">ready, {ingestion.files_failed} failed</Badge>;
  return <Badge tone="good">ready</Badge>;
}

export function isBusy(dataset: Dataset): boolean {
  return dataset.status === 'starting' || (dataset.status === 'running' && dataset.ingestion.files_pending > 0);
}
