import type { Logger } from 'pino';
import { nextTurn } from '../util/next-turn.ts';
import type { VectorStore } from '../vectors/store.ts';
import { cancelJobs, type DatasetRuntime } from './dataset-runtime.ts';
import type { FileRepository } from './files-repository.ts';
import type { KeyedEntry, KeyedQueue } from './keyed-sources.ts';

/** Entries recorded in one transaction, as a folder's scan does (folder-sync.ts). */
const SEEN_BATCH = 100;

export interface KeyedSyncDeps {
  readonly files: FileRepository;
  readonly store: VectorStore;
  readonly log: Logger;
  readonly closing: AbortSignal;
  /** Entries were queued: the claim loop looks. */
  queued(): void;
}

/**
 * The queue of a running keyed dataset (keyed-sources.ts), the counterpart of folder-sync.ts for documents
 * kept by key: an entry's row is recorded with its size and revision in place of a file's size and time,
 * so the queue's own rule (queued again when they differ) re-indexes an edited document and leaves an
 * unchanged one alone; a removal hides the document's chunks at once.
 */
export function keyedQueue(runtime: DatasetRuntime, deps: KeyedSyncDeps): KeyedQueue {
  const stopped = () => runtime.stopped || deps.closing.aborted;
  return {
    stopped,
    async changed(entries: readonly KeyedEntry[]): Promise<void> {
      for (let start = 0; start < entries.length; start += SEEN_BATCH) {
        if (stopped()) return;
        const batch = entries.slice(start, start + SEEN_BATCH);
        await deps.files.seenAll(
          runtime.datasetId,
          batch.map((entry) => ({ path: entry.key, size: entry.size, mtimeMs: entry.revision })),
          runtime.lease,
        );
        const keys = new Set(batch.map((entry) => entry.key));
        // Work on an older version is wasted: the new one is queued already.
        cancelJobs(runtime, 'changed', (job) => keys.has(job.file.path));
        runtime.lane.forget((waiting) => keys.has(waiting.path));
        await nextTurn();
      }
      deps.queued();
    },
    async removed(keys: readonly string[]): Promise<void> {
      const gone = new Set(keys);
      cancelJobs(runtime, 'removed', (job) => gone.has(job.file.path));
      runtime.lane.forget((waiting) => gone.has(waiting.path));
      for (const key of keys) {
        if (stopped()) return;
        await runtime.serial.run(async () => {
          await deps.store.retireFile(runtime.datasetId, key, runtime.lease);
          await deps.files.removed(runtime.datasetId, key, runtime.lease);
        });
      }
    },
  };
}
