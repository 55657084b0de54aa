import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { dirname, extname, isAbsolute, join, relative, sep } from 'node:path';
import { ValidationError } from '../domain/errors.ts';
import { isInside, isInsideAny, realPath } from '../util/paths.ts';

/**
 * Folder browsing for the console (creating a `local_file` dataset, picking a GGUF file): what lies inside
 * the caller's tenant's ingestion roots, and nothing else. Paths are real paths (symbolic links resolved
 * before the check, never followed while listing, as ingestion never follows them); hidden files and
 * folders are skipped, as ingestion skips them. Each sub-folder comes with the number of documents the
 * parsers can read and of `.gguf` files under it, counted within a budget so that a home folder with a
 * million files still answers at once (`complete: false` says a count stopped early).
 */

export interface FolderEntry {
  name: string;
  path: string;
  /** Files of a type the parsers read, in the folder and below it. */
  documents: number;
  /** `.gguf` files in the folder and below it. */
  models: number;
  /** False when counting stopped at the budget: the numbers are then lower bounds. */
  complete: boolean;
}

export interface FileEntry {
  name: string;
  path: string;
  size: number;
  kind: 'document' | 'model';
}

export interface FolderListing {
  /** The folder listed (a real path), or null for the list of roots. */
  path: string | null;
  /** The folder above it while that is inside the roots, else null (the list of roots is above a root). */
  parent: string | null;
  folders: FolderEntry[];
  /** Documents and `.gguf` files directly in the folder. */
  files: FileEntry[];
  /** True when the folder held more entries than are listed. */
  truncated: boolean;
}

export interface FolderBrowserOptions {
  /** The real paths of a tenant's roots (tenants/ingestion-roots.ts). */
  roots(tenantId: string): Promise<string[]>;
  /** Extensions of the documents the parsers read, lower case, without the dot. */
  documentExtensions: readonly string[];
  /** Directory entries visited to count, per listing (default 20,000). */
  countBudget?: number;
  /** Milliseconds spent counting, per listing (default 1,500). */
  countTimeMs?: number;
}

const MODEL_EXTENSION = 'gguf';
const MAX_LISTED = 1000;

export class FolderBrowser {
  private readonly documents: ReadonlySet<string>;

  constructor(private readonly options: FolderBrowserOptions) {
    this.documents = new Set(options.documentExtensions.map((extension) => extension.toLowerCase()));
  }

  /** The tenant's roots (no path), or the folder at `path`, which must lie inside them (422 otherwise). */
  async list(tenantId: string, path?: string): Promise<FolderListing> {
    const roots = await this.options.roots(tenantId);
    const budget = this.budget();
    if (path === undefined || path === '') {
      const folders = await Promise.all(roots.map((root) => this.entry(root, root, budget)));
      return { path: null, parent: null, folders, files: [], truncated: false };
    }
    const folder = await this.folderInside(roots, path);
    const entries = (await readdir(folder, { withFileTypes: true })).filter((entry) => !entry.name.startsWith('.'));
    const directories = entries.filter((entry) => entry.isDirectory()).sort(byName);
    const files = entries.filter((entry) => entry.isFile() && this.kindOf(entry.name) !== undefined).sort(byName);
    const listed = {
      folders: await Promise.all(directories.slice(0, MAX_LISTED).map((entry) => this.entry(join(folder, entry.name), entry.name, budget))),
      files: await Promise.all(files.slice(0, MAX_LISTED).map((entry) => this.file(folder, entry))),
    };
    const parent = dirname(folder);
    return {
      path: folder,
      parent: roots.includes(folder) || !isInsideAny(roots, parent) ? null : parent,
      ...listed,
      truncated: directories.length > MAX_LISTED || files.length > MAX_LISTED,
    };
  }

  private async folderInside(roots: readonly string[], path: string): Promise<string> {
    const refuse = (msg: string) => new ValidationError([{ loc: ['query', 'path'], msg, type: 'value_error' }]);
    if (!isAbsolute(path)) throw refuse('Must be an absolute path');
    const real = realPath(path);
    // The same words whether the folder is missing or outside: nothing is said about what lies outside.
    const outside = refuse("Not a folder inside your tenant's ingestion roots");
    // Hidden folders are never listed (nor indexed), so none is browsed by its path either (~/.ssh, say).
    if (real === undefined || !visiblyInside(roots, real)) throw outside;
    if (!(await stat(real)).isDirectory()) throw outside;
    return real;
  }

  private kindOf(name: string): FileEntry['kind'] | undefined {
    const extension = extname(name).slice(1).toLowerCase();
    if (extension === MODEL_EXTENSION) return 'model';
    return this.documents.has(extension) ? 'document' : undefined;
  }

  private async file(folder: string, entry: Dirent): Promise<FileEntry> {
    const path = join(folder, entry.name);
    const size = await stat(path).then(
      (stats) => stats.size,
      () => 0,
    );
    return { name: entry.name, path, size, kind: this.kindOf(entry.name) ?? 'document' };
  }

  private budget(): Budget {
    return {
      entries: this.options.countBudget ?? 20_000,
      deadline: performance.now() + (this.options.countTimeMs ?? 1500),
    };
  }

  /** A folder with its counts; folders are walked breadth-first so a deep tree does not starve its siblings' counts. */
  private async entry(path: string, name: string, budget: Budget): Promise<FolderEntry> {
    const counts: FolderEntry = { name, path, documents: 0, models: 0, complete: true };
    const pending = [path];
    while (pending.length > 0) {
      if (budget.entries <= 0 || performance.now() > budget.deadline) {
        counts.complete = false;
        break;
      }
      const folder = pending.shift() as string;
      let entries: Dirent[];
      try {
        entries = await readdir(folder, { withFileTypes: true });
      } catch {
        continue; // unreadable: nothing ingestion could read there either
      }
      budget.entries -= entries.length;
      for (const entry of entries) this.count(folder, entry, counts, pending);
    }
    return counts;
  }

  /** Counts one visible file by its kind, or queues one visible folder for the walk. */
  private count(folder: string, entry: Dirent, counts: FolderEntry, pending: string[]): void {
    if (entry.name.startsWith('.')) return;
    if (entry.isDirectory()) pending.push(join(folder, entry.name));
    else if (entry.isFile()) {
      const kind = this.kindOf(entry.name);
      if (kind === 'document') counts.documents++;
      else if (kind === 'model') counts.models++;
    }
  }
}

/** Inside one of the roots, by a way that crosses no hidden folder. */
function visiblyInside(roots: readonly string[], path: string): boolean {
  return roots.some(
    (root) =>
      isInside(root, path) &&
      !relative(root, path)
        .split(sep)
        .some((part) => part.startsWith('.')),
  );
}

interface Budget {
  entries: number;
  deadline: number;
}

function byName(a: Dirent, b: Dirent): number {
  return a.name.localeCompare(b.name);
}
