import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import { nextTurn } from '../util/next-turn.ts';
import type { VectorStore } from '../vectors/store.ts';
import { cancelJobs, type DatasetRuntime } from './dataset-runtime.ts';
import type { FileRepository } from './files-repository.ts';
import { type FileFacts, scanFolder } from './folder.ts';
import { watchFolder } from './watcher.ts';

/** Files of a folder's scan recorded in one transaction (about 10 ms). */
const SEEN_BATCH = 100;

export interface FolderSyncDeps {
  readonly files: FileRepository;
  readonly store: VectorStore;
  readonly log: Logger;
  /** Aborted when the engine closes: a scan stops at its next batch. */
  readonly closing: AbortSignal;
  /** Files were queued: the claim loop looks. */
  queued(): void;
}

/**
 * Keeps a running dataset's durable queue (`dataset_files`) equal to its folder: what the watcher sees
 * (a file added, changed or removed, a folder removed) and, at every start, what a scan of the folder
 * finds. A change bumps the file's generation and queues it, cancelling work on its older version in
 * either phase; a removal hides the file's chunks at once.
 */
export class FolderSync {
  constructor(private readonly deps: FolderSyncDeps) {}

  /** Watches the dataset's folder; resolves once the watch is in place, so a scan started afterwards misses nothing. */
  watch(runtime: DatasetRuntime): Promise<FSWatcher> {
    return watchFolder(runtime.root, runtime.fileTypes, {
      changed: (file) => void this.changed(runtime, file),
      removed: (path, folder) => void this.removed(runtime, path, folder),
      error: (error) => this.deps.log.warn({ dataset: runtime.datasetId, err: error }, 'watching the dataset folder failed'),
    });
  }

  /**
   * Brings the index in line with the folder after a start or restart: new and changed files are
   * queued, files gone while knode was not watching are removed.
   */
  async reconcile(runtime: DatasetRuntime): Promise<void> {
    const { files, closing } = this.deps;
    const found = await scanFolder(runtime.root, runtime.fileTypes);
    // In batches, a turn between two: recorded one after the other, 5,000 files held the API for 0.8 s.
    for (let start = 0; start < found.length; start += SEEN_BATCH) {
      if (runtime.stopped || closing.aborted) return;
      await files.seenAll(runtime.datasetId, found.slice(start, start + SEEN_BATCH));
      await nextTurn();
    }
    const present = new Set(found.map((file) => file.path));
    for (const path of await files.livePaths(runtime.datasetId)) {
      if (runtime.stopped || closing.aborted) return;
      // A file created after the scan read its folder is on disk, just not in `found`.
      if (!present.has(path) && !existsSync(join(runtime.root, path))) await this.removeFile(runtime, path);
    }
  }

  private async changed(runtime: DatasetRuntime, file: FileFacts): Promise<void> {
    if (runtime.stopped) return;
    const { files } = this.deps;
    try {
      if (!(await files.seen(runtime.datasetId, file))) return;
      // Work on an older version is wasted: the new one is queued already.
      const generation = await files.generationOf(runtime.datasetId, file.path);
      if (generation !== undefined) {
        cancelJobs(runtime, 'changed', (job) => job.file.path === file.path && job.file.generation < generation);
        runtime.lane.forget((waiting) => waiting.path === file.path && waiting.generation < generation);
      }
      this.deps.queued();
    } catch (error) {
      this.deps.log.error({ dataset: runtime.datasetId, file: file.path, err: error }, 'recording a changed file failed');
    }
  }

  private async removed(runtime: DatasetRuntime, path: string, folder: boolean): Promise<void> {
    if (runtime.stopped) return;
    // Cancelled first: a file being embedded stops now, not after its removal is written.
    const prefix = `${path}/`;
    const under = (file: string) => file === path || (folder && file.startsWith(prefix));
    cancelJobs(runtime, 'removed', (job) => under(job.file.path));
    runtime.lane.forget((waiting) => under(waiting.path));
    const paths = folder ? await this.deps.files.livePathsUnder(runtime.datasetId, path) : [path];
    for (const removed of paths) await this.removeFile(runtime, removed);
  }

  /** Its chunks are hidden at once; their deletion follows in the background, in short transactions. */
  private removeFile(runtime: DatasetRuntime, path: string): Promise<void> {
    return runtime.serial.run(async () => {
      await this.deps.store.retireFile(runtime.datasetId, path);
      await this.deps.files.removed(runtime.datasetId, path);
    });
  }
}
