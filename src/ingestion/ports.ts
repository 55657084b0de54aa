import type { FencingLease } from '../vectors/store.ts';
import type { SelectedEntry } from './selection-entries.ts';

/** A dataset as ingestion needs it: its tenant and its configuration (checked, secrets opened). */
export interface IngestedDataset {
  id: string;
  tenant_id: string;
  /** `local_file` (a folder) unless told otherwise; a keyed dtype (`rss`) is read through keyed-sources.ts. */
  dtype?: string;
  configuration: IngestionConfiguration;
}

/** What ingestion reads of a dataset's configuration; the embedder's settings go to embeddings/ as they are. */
interface IngestionConfiguration {
  readonly [key: string]: unknown;
  /** The folder the dataset was created with; what is read is its selection (IngestionDatasets.selection). */
  readonly ingestionPath: string;
  /** Lower-case extensions without their dot. */
  readonly fileTypes: readonly string[];
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  readonly embedder: string;
}

export type IngestionStatus = 'starting' | 'running' | 'stopped' | 'error';

/**
 * The dataset records ingestion works for (datasets/repository.ts implements it). Ingestion sits below
 * the datasets module, which drives it, so it names what it needs here instead of importing it.
 */
export interface IngestionDatasets {
  /** Datasets of every tenant that should be ingesting (at start-up, to resume them). */
  listActive(): Promise<IngestedDataset[]>;
  getAnyTenant(id: string): Promise<IngestedDataset | undefined>;
  /** A `local_file` dataset's selection of files and folders (selection-entries.ts), oldest first. */
  selection(id: string): Promise<SelectedEntry[]>;
  /**
   * `error` says why a dataset is in status `error`. Written by the dataset's runtime under its `lease`: fenced
   * (vectors/store.ts, FencingLease), so a former holder's status never lands after a takeover.
   */
  setStatus(id: string, status: IngestionStatus, error?: string | null, lease?: FencingLease): Promise<void>;
}
