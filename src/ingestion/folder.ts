import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';

export interface FileFacts {
  /** Relative to the dataset's folder, with forward slashes (what `metadata.source` shows). */
  path: string;
  size: number;
  mtimeMs: number;
}

/** Hidden files and folders (any segment starting with a dot) are never indexed (API-CONTRACT 4). */
export function isHidden(relativePath: string): boolean {
  return relativePath.split(/[\\/]/).some((segment) => segment.startsWith('.') && segment !== '.');
}

/** Whether a file belongs in the index: visible, and of one of the dataset's `fileTypes`. */
export function isIndexable(relativePath: string, fileTypes: ReadonlySet<string>): boolean {
  const extension = extname(relativePath).slice(1).toLowerCase();
  return !isHidden(relativePath) && fileTypes.has(extension);
}

export function toRelative(root: string, absolutePath: string): string {
  return relative(root, absolutePath).split(sep).join('/');
}

/**
 * Every indexable file under `root`, recursively. Symbolic links are not followed: a link could lead
 * outside the ingestion roots that the dataset was allowed to read.
 */
export async function scanFolder(root: string, fileTypes: ReadonlySet<string>): Promise<FileFacts[]> {
  const files: FileFacts[] = [];
  const folders = [root];
  while (folders.length > 0) {
    const folder = folders.pop() as string;
    for (const entry of await entriesOf(folder)) {
      if (entry.name.startsWith('.')) continue;
      const absolute = join(folder, entry.name);
      if (entry.isDirectory()) {
        folders.push(absolute);
        continue;
      }
      const facts = entry.isFile() ? await indexableFile(root, absolute, fileTypes) : undefined;
      if (facts) files.push(facts);
    }
  }
  return files;
}

/** A folder's entries; none when it was removed or is unreadable meanwhile (the watcher reports what happened to it). */
async function entriesOf(folder: string): Promise<Dirent[]> {
  try {
    return await readdir(folder, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** A file's facts when it is indexable; undefined otherwise, or when it vanished between readdir and stat. */
async function indexableFile(root: string, absolute: string, fileTypes: ReadonlySet<string>): Promise<FileFacts | undefined> {
  const path = toRelative(root, absolute);
  if (!isIndexable(path, fileTypes)) return undefined;
  try {
    const facts = await stat(absolute);
    return { path, size: facts.size, mtimeMs: Math.floor(facts.mtimeMs) };
  } catch {
    return undefined;
  }
}

/**
 * The indexable files of one entry of a dataset's selection: a folder's, recursively (scanFolder), or a file
 * entry's own file (relative path '', named by the entry's prefix), when it is one of the dataset's `fileTypes`.
 */
export async function scanEntry(entry: { path: string; kind: 'file' | 'folder' }, fileTypes: ReadonlySet<string>): Promise<FileFacts[]> {
  if (entry.kind === 'folder') return scanFolder(entry.path, fileTypes);
  if (!fileTypes.has(extname(entry.path).slice(1).toLowerCase())) return [];
  const facts = await stat(entry.path).catch(() => undefined);
  return facts?.isFile() ? [{ path: '', size: facts.size, mtimeMs: Math.floor(facts.mtimeMs) }] : [];
}
