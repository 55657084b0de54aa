import type { Stats } from 'node:fs';
import { type FSWatcher, watch } from 'chokidar';
import type { Clock } from '../util/clock.ts';
import { type FileFacts, isHidden, isIndexable, toRelative } from './folder.ts';

export interface FolderEvents {
  /** A file appeared or changed. */
  changed(file: FileFacts): void;
  /** A file, or a whole folder of files (`folder: true`), went away. */
  removed(path: string, folder: boolean): void;
  error(error: Error): void;
}

/** How long a file must stay the same size before it is read: a half-copied PDF is not a broken one. */
const WRITE_SETTLE_MS = 250;

/**
 * What an event reports of its file. chokidar passes no stats when its own stat failed: the file is then
 * dated by the `clock` (the change is at least that recent), which also differs from the time recorded
 * before, so that the change is queued rather than taken for the version already indexed.
 */
function factsOf(path: string, stats: Stats | undefined, clock: Clock): FileFacts {
  return { path, size: stats?.size ?? 0, mtimeMs: Math.floor(stats?.mtimeMs ?? clock.now()) };
}

/**
 * Watches a dataset's folder (recursively, hidden entries and other file types ignored, symlinks not
 * followed) and resolves once the watch is in place, so a scan started afterwards misses nothing.
 */
export async function watchFolder(root: string, fileTypes: ReadonlySet<string>, events: FolderEvents, clock: Clock): Promise<FSWatcher> {
  const watcher = watch(root, {
    ignoreInitial: true,
    followSymlinks: false,
    awaitWriteFinish: { stabilityThreshold: WRITE_SETTLE_MS, pollInterval: 50 },
    ignored: (path: string, stats?: Stats) => {
      const relativePath = toRelative(root, path);
      if (relativePath === '') return false;
      if (isHidden(relativePath)) return true;
      return stats?.isFile() === true && !isIndexable(relativePath, fileTypes);
    },
  });
  const report = (path: string, stats?: Stats) => {
    const relativePath = toRelative(root, path);
    if (!isIndexable(relativePath, fileTypes)) return;
    events.changed(factsOf(relativePath, stats, clock));
  };
  watcher.on('add', report);
  watcher.on('change', report);
  watcher.on('unlink', (path) => events.removed(toRelative(root, path), false));
  watcher.on('unlinkDir', (path) => events.removed(toRelative(root, path), true));
  watcher.on('error', (error) => events.error(error instanceof Error ? error : new Error(String(error))));
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return watcher;
}

/** What a watched file entry reports: its own changes. */
export interface FileEvents {
  changed(file: FileFacts): void;
  removed(): void;
  error(error: Error): void;
}

/**
 * Watches one selected file (a file entry of a dataset's selection; symlinks not followed); resolves once the
 * watch is in place. It reports its file with the relative path '' (the entry's prefix names it).
 */
export async function watchFile(path: string, events: FileEvents, clock: Clock): Promise<FSWatcher> {
  const watcher = watch(path, {
    ignoreInitial: true,
    followSymlinks: false,
    awaitWriteFinish: { stabilityThreshold: WRITE_SETTLE_MS, pollInterval: 50 },
  });
  const report = (_path: string, stats?: Stats) => events.changed(factsOf('', stats, clock));
  watcher.on('add', report);
  watcher.on('change', report);
  watcher.on('unlink', () => events.removed());
  watcher.on('error', (error) => events.error(error instanceof Error ? error : new Error(String(error))));
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return watcher;
}
