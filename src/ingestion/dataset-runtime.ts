import type { FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { errorMessage } from '../domain/errors.ts';
import { datasetEmbedder, type Embedder, type EmbedderOutbound } from '../embeddings/embedder.ts';
import { SerialQueue } from '../util/serial-queue.ts';
import type { FencingLease, VectorStore } from '../vectors/store.ts';
import type { EmbeddingLane } from './embedding-lane.ts';
import type { EmbeddingPhase } from './embedding-phase.ts';
import type { ClaimedFile, FileRepository } from './files-repository.ts';
import type { FolderSync } from './folder-sync.ts';
import type { KeyedSourceHandle, KeyedSources } from './keyed-sources.ts';
import { keyedQueue } from './keyed-sync.ts';
import type { PieceBackfill } from './piece-backfill.ts';
import type { IngestedDataset, IngestionDatasets } from './ports.ts';
import { ProgressLog } from './progress-log.ts';
import { type CheckedEntry, checkEntry, entryOf, type SelectedEntry } from './selection-entries.ts';

/**
 * A running dataset (its runtime) and the lifecycle of runtimes: started (folder checked, embedder
 * loaded, folder watched and scanned, embedding resumed), stopped, reindexed, refused when its folder may
 * no longer be read, and all stopped when knode closes. The parts of ingestion (folder-sync.ts,
 * claim-loop.ts, keyword-phase.ts, embedding-phase.ts) act on the runtimes registered here.
 *
 * A runtime runs under the dataset's lease (coordination/dataset-leases.ts hands it over; on a single node
 * the local one): every write it makes because it holds the lease (file rows, chunks, the dataset's status)
 * is fenced with it, and refused once the lease is lost. The runtime then writes nothing more, logs no
 * failure and marks nothing failed: the replica that took the dataset over queues its files again at its start.
 *
 * One job, a dataset's runtime from its start to its stop, hence a little over 400 lines.
 */

/** Where a keyed dataset's documents are read from: no folder, no roots (they are handed over as bytes). */
const NO_FOLDER = { entries: [] as RuntimeEntry[], roots: [] as readonly string[] };

/** How long closing waits for datasets still starting (loading their embedder). */
const STARTING_WAIT_MS = 2_000;

/** The real paths of the folders a tenant may index (tenants/ingestion-roots.ts implements it). */
export interface TenantRoots {
  of(tenantId: string): Promise<readonly string[]>;
}

/** What a running dataset needs while it ingests. */
export interface DatasetRuntime {
  readonly datasetId: string;
  readonly tenantId: string;
  /**
   * The files and folders of its selection (selection-entries.ts), each checked against the tenant's roots at
   * start (or when added): watched, scanned and read from. Entries come and go while it runs.
   */
  readonly entries: RuntimeEntry[];
  /** The tenant's roots (real paths), refreshed whenever files are claimed. */
  roots: readonly string[];
  readonly fileTypes: ReadonlySet<string>;
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  readonly embedder: Embedder;
  /** Every change to the dataset's index goes through here, one at a time, each checked against the file's generation first. */
  readonly serial: SerialQueue;
  /** Files claimed and not yet searchable (in their keyword phase): what a stop, a deletion or a change cancels. */
  readonly jobs: Set<FileJob>;
  /** Searchable files waiting for their vectors (the embedding phase). */
  readonly lane: EmbeddingLane;
  /** The later pieces of chunks indexed before whole-chunk vectors, made in the background once it runs. */
  pieces?: PieceBackfill;
  readonly progress: ProgressLog;
  /** Set for a dataset whose documents are kept by key (a feed's items): they are read from it, not from `root`. */
  readonly keyed?: KeyedSources;
  /** The keyed source's poller, stopped with the dataset. */
  source?: KeyedSourceHandle;
  /** The dataset's lease this runtime runs under, which its writes are fenced with; none when started without one (tests). */
  readonly lease?: FencingLease;
  stopped: boolean;
}

/** A selected file or folder of a running dataset, checked (selection-entries.ts), and its watcher. */
export interface RuntimeEntry extends CheckedEntry {
  watcher?: FSWatcher;
}

/** One claimed file on its way through parsing and the keyword index. */
export interface FileJob {
  readonly runtime: DatasetRuntime;
  readonly file: ClaimedFile;
  readonly controller: AbortController;
  done?: Promise<void>;
}

export type CancelCause = 'removed' | 'changed' | 'stopped' | 'closed';

/** The reason a job's signal aborts with; what becomes of the file's row depends on the cause. */
export class Cancelled extends Error {
  override readonly name = 'Cancelled';

  constructor(readonly why: CancelCause) {
    super(`indexing cancelled (${why})`);
  }
}

/** Cancels the jobs `matches` picks: their parsing stops, their waiting slices leave the line. */
export function cancelJobs(runtime: DatasetRuntime, cause: CancelCause, matches: (job: FileJob) => boolean): void {
  for (const job of runtime.jobs) if (matches(job)) job.controller.abort(new Cancelled(cause));
}

/**
 * Whether the lease the runtime runs under is lost (taken over, not renewed in time, released): it writes
 * nothing more, and coordination/dataset-leases.ts stops it.
 */
export function leaseLost(runtime: { readonly lease?: FencingLease }): boolean {
  return runtime.lease?.signal.aborted === true;
}

/** A file that cannot be indexed has no chunks: whatever an older version left is removed (fenced with `lease`). */
export function failFile(
  index: { readonly files: FileRepository; readonly store: VectorStore },
  serial: SerialQueue,
  file: { datasetId: string; path: string; generation: number },
  reason: string,
  lease?: FencingLease,
): Promise<void> {
  return serial.run(async () => {
    if ((await index.files.generationOf(file.datasetId, file.path)) !== file.generation) return;
    await index.store.retireFile(file.datasetId, file.path, lease);
    await index.files.failed(file, reason, lease);
  });
}

export interface DatasetRuntimesDeps {
  readonly config: Config;
  readonly datasets: IngestionDatasets;
  readonly files: FileRepository;
  readonly store: VectorStore;
  readonly log: Logger;
  readonly roots: TenantRoots;
  readonly outbound: EmbedderOutbound;
  /** Aborted when the engine closes. */
  readonly closing: AbortSignal;
  readonly folders: FolderSync;
  readonly embedding: EmbeddingPhase;
  /** Files may be waiting in the queue: the claim loop looks. */
  kick(): void;
  /** The datasets whose documents are kept by key instead of read from a folder (feeds/). */
  readonly keyed?: KeyedSources;
}

/** The running datasets of one engine, by id. */
export class DatasetRuntimes {
  private readonly runtimes = new Map<string, DatasetRuntime>();
  /** Datasets starting now, and the lease each start runs under. */
  private readonly starting = new Map<string, { readonly done: Promise<void>; readonly lease: FencingLease | undefined }>();
  /** The selection change each dataset is following now (selectionChanged). */
  private readonly selecting = new Map<string, Promise<void>>();

  constructor(private readonly deps: DatasetRuntimesDeps) {}

  /** The running datasets now (a copy: one may stop while the caller walks it). */
  running(): DatasetRuntime[] {
    return [...this.runtimes.values()];
  }

  /** Whether a file of a running dataset is in its keyword phase (claimed and not yet searchable). */
  inKeywordPhase(): boolean {
    for (const runtime of this.runtimes.values()) if (runtime.jobs.size > 0) return true;
    return false;
  }

  /** At start-up: every dataset that was ingesting resumes, and its folder is reconciled with the index. */
  async resumeAll(): Promise<void> {
    const active = await this.deps.datasets.listActive();
    await Promise.all(active.map((dataset) => this.start(dataset.id)));
  }

  /**
   * Starts (or resumes) a dataset under its `lease`: status `starting`, then `running` once its folder scan is
   * queued. A runtime (or a start) under a lease since lost is replaced by one under the new lease.
   */
  start(datasetId: string, lease?: FencingLease): Promise<void> {
    const running = this.runtimes.get(datasetId);
    if (this.deps.closing.aborted || (running && !leaseLost(running))) return Promise.resolve();
    const starting = this.starting.get(datasetId);
    if (starting && starting.lease !== lease && starting.lease?.signal.aborted) {
      return starting.done.then(() => this.start(datasetId, lease));
    }
    if (starting) return starting.done;
    const done = this.startNow(datasetId, lease).finally(() => this.starting.delete(datasetId));
    this.starting.set(datasetId, { done, lease });
    return done;
  }

  private async startNow(datasetId: string, lease: FencingLease | undefined): Promise<void> {
    const { datasets, closing, log } = this.deps;
    const stale = this.runtimes.get(datasetId);
    if (stale) await this.shutDown(stale, 'stopped'); // its lease was lost: this start runs under the new one
    const row = await datasets.getAnyTenant(datasetId);
    if (!row) return;
    await datasets.setStatus(datasetId, 'starting', null, lease).catch((error: unknown) => {
      if (!lease?.signal.aborted) throw error;
    });
    if (lease?.signal.aborted) return; // lost already: the replica that took the dataset over starts it
    const started: { runtime?: DatasetRuntime } = {};
    try {
      await this.launch(datasetId, row, lease, started);
    } catch (error) {
      const { runtime } = started;
      if (closing.aborted && !runtime) return; // the database may be closed already
      // Lost while starting (a write was refused): nothing is written, the replica that took it over starts it.
      if (!lease?.signal.aborted) log.error({ dataset: datasetId, err: error }, 'dataset could not start');
      if (runtime) await this.shutDown(runtime, 'stopped');
      if (lease?.signal.aborted) return;
      await datasets.setStatus(datasetId, 'error', `the dataset could not start: ${errorMessage(error)}`, lease);
    }
  }

  /** Checks the selection, loads the embedder, opens the index and the documents: the dataset runs (`started.runtime`). */
  private async launch(
    datasetId: string,
    row: IngestedDataset,
    lease: FencingLease | undefined,
    started: { runtime?: DatasetRuntime },
  ): Promise<void> {
    const { datasets, files, store, config, log, closing, embedding } = this.deps;
    const { configuration } = row;
    const keyed = this.keyedSourceOf(row);
    // A keyed dataset has no folder: its documents come from its source, read through `keyed`.
    const folder = keyed ? NO_FOLDER : await this.checkSelection(row.tenant_id, await datasets.selection(datasetId));
    if ('refused' in folder) {
      log.warn({ dataset: datasetId, reason: folder.refused }, 'dataset folder refused');
      await datasets.setStatus(datasetId, 'error', folder.refused, lease);
      return;
    }
    const embedder = await datasetEmbedder(configuration, {
      dataDir: config.dataDir,
      allowDownload: config.allowModelDownload,
      outbound: await this.deps.outbound(row.tenant_id),
    });
    if (closing.aborted) return; // it resumes at the next start-up (its status is still `starting`)
    await store.createDatasetIndex(datasetId, embedder.dimension, lease);
    await files.requeueInterrupted(datasetId, lease);
    const serial = new SerialQueue();
    const jobs = new Set<FileJob>();
    // The lane reports to whichever runtime of the dataset is registered when its vectors are written.
    const lane = embedding.laneFor(datasetId, embedder, serial, () => this.runtimes.get(datasetId)?.progress);
    const runtime: DatasetRuntime = {
      datasetId,
      tenantId: row.tenant_id,
      entries: folder.entries,
      roots: folder.roots,
      fileTypes: new Set(keyed ? [] : configuration.fileTypes),
      chunkSize: configuration.chunkSize,
      chunkOverlap: configuration.chunkOverlap,
      embedder,
      serial,
      jobs,
      lane,
      progress: new ProgressLog({ datasetId, log, store, busy: () => jobs.size > 0 || lane.size > 0 }),
      stopped: false,
      ...(keyed ? { keyed } : {}),
      ...(lease ? { lease } : {}),
    };
    started.runtime = runtime;
    await this.openDocuments(runtime, row);
    if (runtime.stopped || closing.aborted) return; // stopped (or the engine closed) while the folder was scanned
    await embedding.resume(datasetId, runtime.lane);
    if (!runtime.stopped) runtime.pieces = embedding.piecesFor(datasetId, embedder);
    await datasets.setStatus(datasetId, 'running', null, lease);
    const selection = runtime.entries.map((entry) => entry.path);
    log.info({ dataset: datasetId, selection, embedder: embedder.id }, 'dataset ingestion started');
    this.deps.kick();
  }

  /** The keyed source of a dataset whose documents are kept by key (an `rss` dataset's feeds), if it is one. */
  private keyedSourceOf(row: IngestedDataset): KeyedSources | undefined {
    return row.dtype !== undefined && this.deps.keyed?.handles(row.dtype) ? this.deps.keyed : undefined;
  }

  /**
   * Registers the runtime and starts seeing its documents: a folder is watched, then scanned (a file saved
   * while the scan runs is seen by one or the other); a keyed source (a feed's poller) is opened.
   */
  private async openDocuments(runtime: DatasetRuntime, row: IngestedDataset): Promise<void> {
    const { files, store, log, closing, folders } = this.deps;
    if (runtime.keyed) {
      this.runtimes.set(runtime.datasetId, runtime);
      const queue = keyedQueue(runtime, { files, store, log, closing, queued: () => this.deps.kick() });
      runtime.source = await runtime.keyed.open(row, queue);
      return;
    }
    for (const entry of runtime.entries) entry.watcher = await folders.watch(runtime, entry);
    this.runtimes.set(runtime.datasetId, runtime);
    await folders.reconcile(runtime, runtime.entries);
  }

  /** Every entry of the selection checked now (checkEntry); the first refused one refuses the dataset. */
  private async checkSelection(
    tenantId: string,
    selection: readonly SelectedEntry[],
  ): Promise<{ entries: RuntimeEntry[]; roots: readonly string[] } | { refused: string }> {
    const roots = await this.deps.roots.of(tenantId);
    const entries: RuntimeEntry[] = [];
    for (const selected of selection) {
      const checked = await checkEntry(roots, selected);
      if ('refused' in checked) return checked;
      entries.push(checked);
    }
    return { entries, roots };
  }

  /**
   * The dataset's selection changed (datasets/selection-service.ts): entries added are checked, watched and
   * scanned; entries removed stop being watched and their files leave the index (work on them cancelled). The
   * other entries go on untouched. A dataset that is not running only loses the files no entry holds any more.
   */
  selectionChanged(datasetId: string, removed: readonly SelectedEntry[] = []): Promise<void> {
    // One change at a time per dataset: two at once would both see an entry as new and watch it twice.
    const previous = this.selecting.get(datasetId) ?? Promise.resolve();
    const next = previous.then(() => this.followSelection(datasetId, removed));
    const settled = next.catch(() => undefined);
    this.selecting.set(datasetId, settled);
    void settled.then(() => this.selecting.get(datasetId) === settled && this.selecting.delete(datasetId));
    return next;
  }

  private async followSelection(datasetId: string, removed: readonly SelectedEntry[]): Promise<void> {
    await this.starting.get(datasetId)?.done;
    const { datasets, folders } = this.deps;
    const row = await datasets.getAnyTenant(datasetId);
    if (!row || this.keyedSourceOf(row)) return;
    const selection = await datasets.selection(datasetId);
    const runtime = this.runtimes.get(datasetId);
    if (!runtime) return folders.dropEntries(datasetId, [...selection, ...removed], removed);
    const key = (entry: SelectedEntry) => `${entry.prefix}\0${entry.path}`;
    const runningKey = (entry: RuntimeEntry) => `${entry.prefix}\0${entry.configured}`;
    const before = [...runtime.entries];
    const kept = new Set(selection.map(key));
    const dropped = before.filter((entry) => !kept.has(runningKey(entry)));
    for (const entry of dropped) {
      runtime.entries.splice(runtime.entries.indexOf(entry), 1);
      await entry.watcher?.close();
    }
    const wasDropped = (path: string) => {
      const entry = entryOf(before, path);
      return entry !== undefined && dropped.includes(entry);
    };
    cancelJobs(runtime, 'removed', (job) => wasDropped(job.file.path));
    runtime.lane.forget((waiting) => wasDropped(waiting.path));
    await folders.dropEntries(datasetId, before, dropped, runtime);
    const running = new Set(runtime.entries.map(runningKey));
    const added: RuntimeEntry[] = [];
    for (const selected of selection) {
      if (running.has(key(selected))) continue;
      const checked: RuntimeEntry | { refused: string } = await checkEntry(runtime.roots, selected);
      if ('refused' in checked) return this.refuse(runtime, checked.refused);
      const watcher = await folders.watch(runtime, checked);
      checked.watcher = watcher;
      if (runtime.stopped) return void (await watcher.close());
      runtime.entries.push(checked);
      added.push(checked);
    }
    await folders.reconcile(runtime, added);
    this.deps.kick();
  }

  /** Pauses a dataset: no watching, no indexing; its index stays searchable. Work in progress is cancelled. */
  async stop(datasetId: string, status: 'stopped' | null = 'stopped'): Promise<void> {
    // A dataset still scanning its folder is registered already: it stops at the next file, not after the scan.
    await this.stopRuntime(datasetId, 'stopped');
    await this.starting.get(datasetId)?.done;
    await this.stopRuntime(datasetId, 'stopped');
    // The status asked for (by the API, wherever the runtime ran): not a write of the lease holder's, so not fenced.
    if (status) await this.deps.datasets.setStatus(datasetId, status);
  }

  private async stopRuntime(datasetId: string, cause: 'stopped' | 'closed'): Promise<void> {
    const runtime = this.runtimes.get(datasetId);
    if (runtime) await this.shutDown(runtime, cause);
  }

  /** Before a dataset is deleted: stops it and drops its index. */
  async remove(datasetId: string): Promise<void> {
    await this.stop(datasetId, null);
    await this.deps.store.dropDatasetIndex(datasetId);
  }

  /**
   * Indexes every file again from scratch (e.g. after changing the embedder's model files). The folder
   * is checked again first: one that now resolves outside the tenant's roots stops the dataset
   * (status `error`), and one that now leads to another allowed folder is watched and read from there.
   */
  async reindex(datasetId: string): Promise<void> {
    await this.starting.get(datasetId)?.done;
    const runtime = this.runtimes.get(datasetId);
    if (runtime && !runtime.keyed) {
      const folder = await this.checkSelection(runtime.tenantId, await this.deps.datasets.selection(datasetId));
      if ('refused' in folder) return this.refuse(runtime, folder.refused);
      const moved = (entry: RuntimeEntry, index: number) => entry.path !== runtime.entries[index]?.path;
      if (folder.entries.length !== runtime.entries.length || folder.entries.some(moved)) {
        await this.shutDown(runtime, 'stopped');
        await this.deps.files.requeueAll(datasetId, runtime.lease);
        return this.start(datasetId, runtime.lease);
      }
      runtime.roots = folder.roots;
    }
    // Asked of a dataset that runs nowhere here, the files are queued again in the shared queue, unfenced.
    await this.deps.files.requeueAll(datasetId, runtime?.lease);
    runtime?.lane.forget(() => true);
    this.deps.kick();
  }

  /** The folder may no longer be read: everything stops, and the dataset shows why. */
  async refuse(runtime: DatasetRuntime, reason: string): Promise<void> {
    this.deps.log.warn({ dataset: runtime.datasetId, reason }, 'dataset folder refused');
    await this.shutDown(runtime, 'stopped');
    await this.deps.datasets.setStatus(runtime.datasetId, 'error', reason, runtime.lease);
  }

  /**
   * When the engine closes (its `closing` signal aborted first): every dataset stops, its files queued
   * again for the next start-up.
   */
  async closeAll(): Promise<void> {
    const stopAll = () => Promise.all([...this.runtimes.keys()].map((datasetId) => this.stopRuntime(datasetId, 'closed')));
    await stopAll(); // running datasets, and those still scanning their folder
    // A dataset whose embedder is still loading (or whose model server does not answer) is not waited
    // for long: it never touches the database once the engine is closed, and resumes at the next start-up.
    await Promise.race([Promise.allSettled([...this.starting.values()].map((starting) => starting.done)), delay(STARTING_WAIT_MS)]);
    await stopAll();
  }

  private async shutDown(runtime: DatasetRuntime, cause: 'stopped' | 'closed'): Promise<void> {
    runtime.stopped = true;
    if (this.runtimes.get(runtime.datasetId) === runtime) this.runtimes.delete(runtime.datasetId);
    const jobs = [...runtime.jobs];
    for (const job of jobs) job.controller.abort(new Cancelled(cause));
    await Promise.all(runtime.entries.map((entry) => entry.watcher?.close()));
    await runtime.source?.close();
    await Promise.allSettled([...jobs.map((job) => job.done), runtime.lane.stop(), runtime.pieces?.stop()]);
    await runtime.serial.run(async () => undefined); // let a commit in progress finish
  }
}

/** A timer that does not keep the process alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
