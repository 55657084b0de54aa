import type { Logger } from 'pino';

/** How often a busy dataset logs its progress. */
const PROGRESS_LOG_MS = 10_000;

export interface ProgressLogOptions {
  readonly datasetId: string;
  readonly log: Logger;
  /** The store's longest write transaction so far: the API waited that long at most. */
  readonly store: { readonly longestWriteMs: number };
  /** Whether the dataset still has files in either phase. */
  readonly busy: () => boolean;
}

/**
 * One dataset's ingestion progress, logged as files made searchable and chunks embedded per second:
 * every few seconds while the dataset is busy, and once when it has nothing left to do.
 */
export class ProgressLog {
  private files = 0;
  private chunks = 0;
  private since = performance.now();

  constructor(private readonly options: ProgressLogOptions) {}

  /** A file is about to start its keyword phase: progress is measured from when work resumes, not from the last file hours ago. */
  resuming(): void {
    if (!this.options.busy() && this.files === 0 && this.chunks === 0) this.since = performance.now();
  }

  searchable(): void {
    this.files++;
  }

  embedded(chunks: number): void {
    this.chunks += chunks;
  }

  /** Logs what was done since the last line, if there is something and it is time. */
  report(): void {
    const { datasetId, log, store, busy } = this.options;
    const elapsed = performance.now() - this.since;
    if (this.files === 0 && this.chunks === 0) return;
    if (busy() && elapsed < PROGRESS_LOG_MS) return;
    const seconds = elapsed / 1000;
    log.info(
      {
        dataset: datasetId,
        files: this.files,
        chunks: this.chunks,
        seconds: Number(seconds.toFixed(2)),
        chunks_per_second: Math.round(this.chunks / seconds),
        longest_write_ms: Math.round(store.longestWriteMs),
      },
      'ingested files',
    );
    this.files = 0;
    this.chunks = 0;
    this.since = performance.now();
  }
}
