import { realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isInsideAny } from '../util/paths.ts';

/**
 * A `local_file` dataset's selection (issue 27, item 3): the files and folders it indexes, each by its real
 * path, and the `prefix` its files are listed under in `dataset_files` (what `metadata.source` and the file
 * list show). The entry a dataset was created with (`ingestionPath`) has the prefix '': its files keep the
 * paths relative to that folder they always had. Every entry added later has its own name as prefix (unique
 * within the dataset): a folder's files are `<prefix>/<path inside it>`, a file is `<prefix>` alone. So one
 * path of the dataset names one file, whatever the entries; a path whose first segment is another entry's
 * prefix belongs to that entry, even when the '' folder has a folder of that name (which is then not read).
 */
export interface SelectedEntry {
  /** The real path, checked against the tenant's roots when the entry was added (and again at every start). */
  readonly path: string;
  readonly kind: 'file' | 'folder';
  readonly prefix: string;
}

/** An entry as a running dataset reads it: `path` its real path now, `configured` the path stored. */
export interface CheckedEntry extends SelectedEntry {
  readonly configured: string;
}

/** The dataset path of a file found at `relative` (forward slashes) inside the entry (a file entry: ''). */
export function datasetPathOf(entry: Pick<SelectedEntry, 'prefix'>, relative: string): string {
  if (entry.prefix === '') return relative;
  return relative === '' ? entry.prefix : `${entry.prefix}/${relative}`;
}

/** The entry a dataset path belongs to, if any: the one whose prefix is its first segment, else the '' entry. */
export function entryOf<Entry extends Pick<SelectedEntry, 'prefix' | 'kind'>>(entries: readonly Entry[], path: string): Entry | undefined {
  const first = path.split('/')[0] as string;
  const named = entries.find((entry) => entry.prefix !== '' && entry.prefix === first);
  if (named) return named.kind === 'file' && path !== named.prefix ? undefined : named;
  return entries.find((entry) => entry.prefix === '');
}

/**
 * Where a dataset path's file is on disk, and the folder it must really lie in when it is read
 * (read-file.ts's confinement: its entry's folder, or a file entry's own folder).
 */
export function locate(entries: readonly SelectedEntry[], path: string): { absolute: string; folder: string } | undefined {
  const entry = entryOf(entries, path);
  if (!entry) return undefined;
  if (entry.kind === 'file') return { absolute: entry.path, folder: dirname(entry.path) };
  const inside = entry.prefix === '' ? path : path.slice(entry.prefix.length + 1);
  return { absolute: join(entry.path, inside), folder: entry.path };
}

/**
 * An entry's real path, checked against the tenant's roots now: the entry (or a folder above it) may have
 * been swapped for a symbolic link since it was added or the dataset last started.
 */
export async function checkEntry(roots: readonly string[], selected: SelectedEntry): Promise<CheckedEntry | { refused: string }> {
  const configured = selected.path;
  const noun = selected.kind === 'file' ? 'file' : 'folder';
  let real: string;
  try {
    real = await realpath(configured);
  } catch {
    return { refused: `the ${noun} '${configured}' does not exist or cannot be read` };
  }
  if (!isInsideAny(roots, real)) {
    const where = real === configured ? 'is' : `now resolves to '${real}',`;
    return { refused: `the ${noun} '${configured}' ${where} outside this tenant's ingestion roots` };
  }
  const facts = await stat(real).catch(() => undefined);
  const right = selected.kind === 'file' ? facts?.isFile() : facts?.isDirectory();
  if (!right) return { refused: `'${configured}' is not a ${noun}` };
  return { path: real, configured, kind: selected.kind, prefix: selected.prefix };
}
