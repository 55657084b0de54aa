import { existsSync } from 'node:fs';
import type { FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.ts';
import { nextTurn } from '../util/next-turn.ts';
import type { VectorStore } from '../vectors/store.ts';
import { cancelJobs, type DatasetRuntime, leaseLost, type RuntimeEntry } from './dataset-runtime.ts';
import type { FileRepository } from './files-repository.ts';
import { type FileFacts, scanEntry } from './folder.ts';
import { datasetPathOf, entryOf, locate, type SelectedEntry } from './selection-entries.ts';
import { watchFile, watchFolder } from './watcher.ts';

/** Files of a folder's scan recorded in one transaction (about 10 ms). */
const SEEN_BATCH = 100;

export interface FolderSyncDeps {
  readonly files: FileRepository;
  readonly store: VectorStore;
  readonly log: Logger;
  /** Dates a changed file the watcher could not stat (watcher.ts). */
  readonly clock: Clock;
  /** Aborted when the engine closes: a scan stops at its next batch. */
  readonly closing: AbortSignal;
  /** Files were queued: the claim loop looks. */
  queued(): void;
}

/**
 * Keeps a running dataset's durable queue (`dataset_files`) equal to its selection's files and folders
 * (selection-entries.ts): what the watcher of each entry sees (a file added, changed or removed, a folder
 * removed) and, at every start or when an entry is added, what a scan of the entry finds. A change bumps the
 * file's generation and queues it, cancelling work on its older version in either phase; a removal (of a
 * file, or of the entry holding it) hides the file's chunks at once. Each of these writes is fenced with the
 * dataset's lease (dataset-runtime.ts): a replica that lost the dataset records nothing more of its folder.
 */
export class FolderSync {
  constructor(private readonly deps: FolderSyncDeps) {}

  /**
   * Watches one entry of the dataset's selection; resolves once the watch is in place, so a scan started
   * afterwards misses nothing. What it reports is named by dataset path; a path another entry holds is not its own.
   */
  watch(runtime: DatasetRuntime, entry: RuntimeEntry): Promise<FSWatcher> {
    const error = (error: Error) => this.deps.log.warn({ dataset: runtime.datasetId, err: error }, 'watching the dataset folder failed');
    if (entry.kind === 'file') {
      return watchFile(
        entry.path,
        {
          changed: (file) => void this.changed(runtime, { ...file, path: entry.prefix }),
          removed: () => void this.removed(runtime, entry.prefix, false).catch(this.removalFailed(runtime, entry.prefix)),
          error,
        },
        this.deps.clock,
      );
    }
    const owns = (path: string) => entryOf(runtime.entries, path) === entry || !runtime.entries.includes(entry);
    return watchFolder(
      entry.path,
      runtime.fileTypes,
      {
        changed: (file) => {
          const path = datasetPathOf(entry, file.path);
          if (owns(path)) void this.changed(runtime, { ...file, path });
        },
        removed: (relative, folder) => {
          const path = datasetPathOf(entry, relative);
          if (path === '' || owns(path)) void this.removed(runtime, path, folder).catch(this.removalFailed(runtime, path));
        },
        error,
      },
      this.deps.clock,
    );
  }

  /**
   * Brings the index in line with the given entries after a start or restart, or once they are added: new and
   * changed files are queued, files gone while knode was not watching are removed, and so are files no entry
   * of the selection holds any more.
   */
  async reconcile(runtime: DatasetRuntime, entries: readonly RuntimeEntry[]): Promise<void> {
    const { files, closing } = this.deps;
    const found = await filesOfEntries(runtime, entries);
    // In batches, a turn between two: recorded one after the other, 5,000 files held the API for 0.8 s.
    for (let start = 0; start < found.length; start += SEEN_BATCH) {
      if (runtime.stopped || closing.aborted) return;
      await files.seenAll(runtime.datasetId, found.slice(start, start + SEEN_BATCH), runtime.lease);
      await nextTurn();
    }
    const present = new Set(found.map((file) => file.path));
    for (const path of await files.livePaths(runtime.datasetId)) {
      if (runtime.stopped || closing.aborted) return;
      if (isGone(runtime, entries, present, path)) await this.removeFile(runtime, path);
    }
  }

  /**
   * Entries left the dataset's selection: the files they held (named against the selection `before` the
   * change) leave the index, their chunks hidden at once and deleted in the background, as if deleted from
   * disk. A running dataset removes them through its serial queue; one that is not running, directly.
   */
  async dropEntries(
    datasetId: string,
    before: readonly SelectedEntry[],
    removed: readonly SelectedEntry[],
    runtime?: DatasetRuntime,
  ): Promise<void> {
    const { files, store } = this.deps;
    const gone = new Set(removed.map((entry) => `${entry.prefix}\0${entry.path}`));
    for (const path of await files.livePaths(datasetId)) {
      const entry = entryOf(before, path);
      if (!entry || !gone.has(`${entry.prefix}\0${entry.path}`)) continue;
      if (runtime) {
        await this.removeFile(runtime, path);
        continue;
      }
      await store.retireFile(datasetId, path).catch(() => undefined); // a dataset that never started has no index
      await files.removed(datasetId, path);
    }
  }

  private async changed(runtime: DatasetRuntime, file: FileFacts): Promise<void> {
    if (runtime.stopped) return;
    const { files } = this.deps;
    try {
      if (!(await files.seen(runtime.datasetId, file, runtime.lease))) return;
      // Work on an older version is wasted: the new one is queued already.
      const generation = await files.generationOf(runtime.datasetId, file.path);
      if (generation !== undefined) {
        cancelJobs(runtime, 'changed', (job) => job.file.path === file.path && job.file.generation < generation);
        runtime.lane.forget((waiting) => waiting.path === file.path && waiting.generation < generation);
      }
      this.deps.queued();
    } catch (error) {
      if (leaseLost(runtime)) return; // refused: the dataset is another replica's now, and stops here
      this.deps.log.error({ dataset: runtime.datasetId, file: file.path, err: error }, 'recording a changed file failed');
    }
  }

  private removalFailed(runtime: DatasetRuntime, path: string): (error: unknown) => void {
    return (error) => {
      if (leaseLost(runtime)) return; // refused: the dataset is another replica's now, and stops here
      this.deps.log.error({ dataset: runtime.datasetId, file: path, err: error }, 'recording a removed file failed');
    };
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
      await this.deps.store.retireFile(runtime.datasetId, path, runtime.lease);
      await this.deps.files.removed(runtime.datasetId, path, runtime.lease);
    });
  }
}

/** The indexable files of the given entries, named as the dataset names them; each file once, under the entry that holds it. */
async function filesOfEntries(runtime: DatasetRuntime, entries: readonly RuntimeEntry[]): Promise<FileFacts[]> {
  const found: FileFacts[] = [];
  for (const entry of entries) {
    for (const file of await scanEntry(entry, runtime.fileTypes)) {
      const path = datasetPathOf(entry, file.path);
      if (entryOf(runtime.entries, path) === entry) found.push({ ...file, path });
    }
  }
  return found;
}

/**
 * Whether an indexed file is gone after a scan of `entries` that found `present`: no entry of the selection holds
 * it any more, or its entry was scanned without finding it and it is not on disk (a file created after the scan
 * read its folder is on disk, just not in `present`). Files of entries not scanned are left alone.
 */
function isGone(runtime: DatasetRuntime, entries: readonly RuntimeEntry[], present: ReadonlySet<string>, path: string): boolean {
  const entry = entryOf(runtime.entries, path);
  if (entry && (!entries.includes(entry) || present.has(path))) return false;
  const located = locate(runtime.entries, path);
  return !located || !existsSync(located.absolute);
}
