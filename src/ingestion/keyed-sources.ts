import type { IngestedDataset } from './ports.ts';

/**
 * Datasets whose documents are not files in a folder but entries another module keeps by key (a feed's
 * items, feeds/): the module keeps the dataset's durable queue (`dataset_files`, one row per key) equal to
 * its source through a KeyedQueue, and hands each queued document's bytes over when it is claimed. From the
 * queue on, such a document goes through the same two phases as a file (parsed on a parse thread, keywords,
 * then vectors), so search, calibration, progress and the file list treat it as one. Ingestion names what
 * it needs here; the module that keeps the documents implements it (wired in services.ts).
 */
export interface KeyedSources {
  /** Whether this dtype's documents are kept by key (`rss`). */
  handles(dtype: string): boolean;
  /** Starts keeping the running dataset's queue equal to its source (a poller); the handle stops it. */
  open(dataset: IngestedDataset, queue: KeyedQueue): Promise<KeyedSourceHandle>;
  /**
   * The document queued under `key` (in the generation the queue says), or an error whose message says why
   * it cannot be indexed (the item was over its size limit, say): the document then fails with that reason.
   */
  read(datasetId: string, key: string): Promise<KeyedDocument>;
}

export interface KeyedSourceHandle {
  /** Stops the source (a poll in progress is cancelled); resolves once it no longer touches the queue. */
  close(): Promise<void>;
}

/** A keyed document's bytes, the name its parser is chosen by (`item.html`), and metadata its chunks carry. */
export interface KeyedDocument {
  readonly name: string;
  readonly bytes: Uint8Array;
  /** Laid over a chunk's own metadata (`source`, `title`, `url`, `published_at` for a feed item). */
  readonly metadata: Readonly<Record<string, string | number>>;
}

/** A document seen new or changed: `revision` goes up with every change, which is what queues it again. */
export interface KeyedEntry {
  readonly key: string;
  readonly size: number;
  readonly revision: number;
}

/** What a keyed source tells the dataset's queue. */
export interface KeyedQueue {
  /** New or edited documents: queued again, work on an older version cancelled. */
  changed(entries: readonly KeyedEntry[]): Promise<void>;
  /** Documents gone from the source: their chunks hidden at once and their rows marked removed. */
  removed(keys: readonly string[]): Promise<void>;
  /** The dataset stopped (or knode is closing): the source should stop touching the queue. */
  readonly stopped: () => boolean;
}
