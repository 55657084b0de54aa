import { readdirSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import type { Static } from 'typebox';
import { conflictAs } from '../db/conflicts.ts';
import type { DbOrTransaction } from '../db/database.ts';
import { ConflictError, NotFoundError } from '../domain/errors.ts';
import type { Tenant } from '../domain/principal.ts';
import { Issues } from '../http/issues.ts';
import { isHidden } from '../ingestion/folder.ts';
import { entryOf, type SelectedEntry } from '../ingestion/selection-entries.ts';
import type { IngestionRoots } from '../tenants/ingestion-roots.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { isInside, placeInside, realPath } from '../util/paths.ts';
import type { DatasetRecord } from './codec.ts';
import type { DatasetRepository } from './repository.ts';
import { deleteEntries, insertEntries, liveFileStates, type SelectionRow, selectionOf } from './selection-repository.ts';
import type { SelectionEntryView } from './selection-schemas.ts';

export type SelectionEntryViewData = Static<typeof SelectionEntryView>;

/** What the engine does when a dataset's selection changed (ingestion/engine.ts implements it). */
export interface SelectionIngestion {
  /** `removed`: the entries just taken out, as they were (their files leave the index). */
  selectionChanged(datasetId: string, removed?: readonly SelectedEntry[]): Promise<void>;
}

const PENDING = new Set(['queued', 'indexing', 'searchable']);

/**
 * The rules of a `local_file` dataset's selection (API-CONTRACT 4, "Selections"): each path added is checked
 * as `ingestionPath` is (inside the tenant's roots once links are followed, existing; a file of one of the
 * dataset's `fileTypes`, or a folder; not hidden). A path already selected is merged (listed once); one inside
 * a selected folder, or a folder holding a selected entry, is refused (422 naming both): one file must never
 * be indexed twice under two names. Every entry added gets the prefix its files are listed under
 * (selection-entries.ts), unique in the dataset and unlike the top-level names of the dataset's first folder.
 * Removing an entry removes its files' chunks. `configuration.ingestionPath` follows the oldest entry.
 */
export class DatasetSelectionService {
  constructor(
    private readonly db: DbOrTransaction,
    private readonly datasets: DatasetRepository,
    private readonly roots: IngestionRoots,
    private readonly ingestion: SelectionIngestion,
    private readonly clock: Clock,
  ) {}

  async list(tenant: Tenant, id: string): Promise<SelectionEntryViewData[]> {
    const dataset = await this.require(tenant, id);
    if (dataset.dtype !== 'local_file') return [];
    const entries = await selectionOf(this.db, id);
    const views = new Map(entries.map((entry) => [entry, emptyView(entry)]));
    for (const file of await liveFileStates(this.db, id)) {
      const entry = entryOf(entries, file.path);
      const view = entry && views.get(entry);
      if (!view) continue;
      view.files += 1;
      if (file.status === 'searchable' || file.status === 'indexed') {
        view.files_searchable += 1;
        view.chunks += file.chunks;
        view.chunks_embedded += file.chunksEmbedded;
      }
      if (file.status === 'indexed') view.files_indexed += 1;
      if (file.status === 'failed') view.files_failed += 1;
      if (PENDING.has(file.status)) view.files_pending += 1;
    }
    return [...views.values()].map(settle);
  }

  async add(tenant: Tenant, id: string, paths: readonly string[]): Promise<SelectionEntryViewData[]> {
    const dataset = await this.requireLocal(tenant, id);
    const roots = await this.roots.of(tenant.id);
    const selected = await selectionOf(this.db, id);
    const fileTypes = new Set(dataset.configuration.fileTypes);
    const issues = new Issues();
    const added: SelectionRow[] = [];
    const taken = new Set([...selected.map((entry) => entry.prefix), ...topLevelNames(selected)]);
    const addedAt = isoNow(this.clock);
    for (const [index, path] of paths.entries()) {
      const problem = (msg: string) => issues.add(['paths', index], `'${path}': ${msg}`);
      const checked = selectable(roots, path, fileTypes);
      if ('problem' in checked) {
        problem(checked.problem);
        continue;
      }
      const { real, kind } = checked;
      const every = [...selected, ...added];
      if (every.some((entry) => entry.path === real)) continue; // already selected: merged
      const overlap = overlapProblem(every, real, kind);
      if (overlap) {
        problem(overlap);
        continue;
      }
      const prefix = freePrefix(real, kind, taken);
      taken.add(prefix);
      added.push({ path: real, kind, prefix, addedAt });
    }
    issues.throwIfAny();
    if (added.length > 0) {
      await conflictAs('The selection changed meanwhile: try again', () => insertEntries(this.db, id, added));
      await this.followSelection(tenant, id);
    }
    return this.list(tenant, id);
  }

  async remove(tenant: Tenant, id: string, paths: readonly string[]): Promise<SelectionEntryViewData[]> {
    await this.requireLocal(tenant, id);
    const selected = await selectionOf(this.db, id);
    const issues = new Issues();
    const removed: SelectionRow[] = [];
    for (const [index, path] of paths.entries()) {
      // Named as listed, or by a path that leads to it (the list shows real paths).
      const real = realPath(path);
      const entry = selected.find((candidate) => candidate.path === path || candidate.path === real);
      if (entry && !removed.includes(entry)) removed.push(entry);
      else if (entry) continue;
      else issues.add(['paths', index], `'${path}' is not in the dataset's selection`);
    }
    issues.throwIfAny();
    await deleteEntries(
      this.db,
      id,
      removed.map((entry) => entry.path),
    );
    await this.followSelection(tenant, id, removed);
    return this.list(tenant, id);
  }

  /** The engine watches what was added and retires what was removed; ingestionPath follows the oldest entry. */
  private async followSelection(tenant: Tenant, id: string, removed: readonly SelectedEntry[] = []): Promise<void> {
    const entries = await selectionOf(this.db, id);
    await this.datasets.setIngestionPath(tenant.id, id, entries[0]?.path ?? '');
    await this.ingestion.selectionChanged(id, removed);
  }

  private async require(tenant: Tenant, id: string): Promise<DatasetRecord> {
    const row = await this.datasets.get(tenant.id, id);
    if (!row) throw new NotFoundError(`Dataset '${id}' not found`);
    return row;
  }

  private async requireLocal(tenant: Tenant, id: string): Promise<DatasetRecord> {
    const row = await this.require(tenant, id);
    if (row.dtype !== 'local_file') throw new ConflictError(`Dataset '${row.name}' reads feeds: it has no selection of files and folders`);
    return row;
  }
}

/** A path to select, placed inside the tenant's roots: its real path and kind, or why it cannot be selected. */
function selectable(
  roots: Parameters<typeof placeInside>[0],
  path: string,
  fileTypes: ReadonlySet<string>,
): { real: string; kind: 'file' | 'folder' } | { problem: string } {
  const placed = placeInside(roots, path);
  if ('problem' in placed) return { problem: placed.problem };
  const real = placed.real;
  const kind = kindOf(real);
  if (!kind) return { problem: 'is not a file or a folder' };
  if (isHidden(basename(real))) return { problem: 'hidden files and folders are not indexed' };
  if (kind === 'file' && !fileTypes.has(extname(real).slice(1).toLowerCase())) {
    return { problem: `is not one of the dataset's file types (${[...fileTypes].join(', ')})` };
  }
  return { real, kind };
}

/** Why an entry cannot join the selection `every`: it is inside a selected folder, or holds a selected entry. */
function overlapProblem(every: readonly SelectionRow[], real: string, kind: 'file' | 'folder'): string | undefined {
  const holder = every.find((entry) => entry.kind === 'folder' && isInside(entry.path, real));
  if (holder) return `is inside the selected folder '${holder.path}'`;
  const held = kind === 'folder' ? every.find((entry) => isInside(real, entry.path)) : undefined;
  if (held) return `holds the selected ${held.kind} '${held.path}': remove that entry first`;
  return undefined;
}

function kindOf(real: string): 'file' | 'folder' | undefined {
  const facts = statSync(real, { throwIfNoEntry: false });
  if (facts?.isFile()) return 'file';
  if (facts?.isDirectory()) return 'folder';
  return undefined;
}

/** The top-level names of the '' entry's folder: a prefix like one of them would hide its files. */
function topLevelNames(selected: readonly SelectionRow[]): string[] {
  const first = selected.find((entry) => entry.prefix === '');
  if (!first) return [];
  try {
    return readdirSync(first.path);
  } catch {
    return [];
  }
}

/** The entry's own name, or `name-2`, `name-3`… (before a file's extension, which chooses its parser). */
function freePrefix(real: string, kind: 'file' | 'folder', taken: ReadonlySet<string>): string {
  const name = basename(real);
  const extension = kind === 'file' ? extname(name) : '';
  const stem = name.slice(0, name.length - extension.length);
  let candidate = name;
  for (let count = 2; taken.has(candidate); count += 1) candidate = `${stem}-${count}${extension}`;
  return candidate;
}

function emptyView(entry: SelectionRow): SelectionEntryViewData {
  return {
    path: entry.path,
    kind: entry.kind,
    source: entry.prefix,
    added_at: entry.addedAt,
    files: 0,
    files_searchable: 0,
    files_indexed: 0,
    files_failed: 0,
    files_pending: 0,
    chunks: 0,
    chunks_embedded: 0,
    status: 'empty',
    progress: 1,
  };
}

function settle(view: SelectionEntryViewData): SelectionEntryViewData {
  if (view.files === 0) return view;
  const status = view.files_pending > 0 ? 'indexing' : view.files_failed === view.files ? 'failed' : 'indexed';
  return { ...view, status, progress: (view.files_indexed + view.files_failed) / view.files };
}
