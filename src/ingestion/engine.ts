import { existsSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { errorMessage } from '../domain/errors.ts';
import { datasetEmbedder, type Embedder, type EmbedderOutbound } from '../embeddings/embedder.ts';
import { nextTurn } from '../util/next-turn.ts';
import { isInsideAny } from '../util/paths.ts';
import { SerialQueue } from '../util/serial-queue.ts';
import type { ChunkSource, VectorStore } from '../vectors/store.ts';
import { EmbeddingLane, type LaneFile, type WindowLimits } from './embedding-lane.ts';
import { EmbeddingScheduler, type SliceLimits } from './embedding-scheduler.ts';
import type { ClaimedFile, FileRepository } from './files-repository.ts';
import { type FileFacts, scanFolder } from './folder.ts';
import type { PreparedFile, PrepareOptions } from './parse-worker.ts';
import { type ParserPool, ParserPoolClosedError } from './parser-pool.ts';
import type { IngestionDatasets } from './ports.ts';
import { TurnGate } from './turn-gate.ts';
import { watchFolder } from './watcher.ts';

/** Files of one dataset claimed at once (rows only: a file's text is in memory only while it holds a parse turn). */
const DATASET_FILES_IN_FLIGHT = 32;
/** Files a dataset claims in one turn. */
const CLAIM_FILES = 16;
/** About a second of USE-lite work on two threads; an OpenAI-compatible server gets one request. */
const SLICE: SliceLimits = { texts: 64, characters: 16_000 };
/** Two slices at once keep both embedding threads busy across the gap between slices. */
const EMBED_CONCURRENCY = 2;
/**
 * The chunks a dataset's embedding lane reads back from the store at once (a few slices' worth), and
 * how many such windows it has in flight: what memory holds of the second phase, per dataset.
 */
const EMBED_WINDOW: WindowLimits = { texts: 256, characters: 64_000 };
const EMBED_WINDOWS_IN_FLIGHT = 2;
/**
 * Embedding waits while files wait for the keyword index, unless none has become searchable for this
 * long: a file that takes minutes to parse (a 500-page PDF) does not hold every dataset's vectors back.
 */
const KEYWORD_FIRST_MS = 2_000;
/** Files of a folder's scan recorded in one transaction (about 10 ms). */
const SEEN_BATCH = 100;
/** How often a busy dataset logs its progress. */
const PROGRESS_LOG_MS = 10_000;
/** How long closing waits for datasets still starting (loading their embedder). */
const STARTING_WAIT_MS = 2_000;

export interface IngestionEngineDeps {
  config: Config;
  datasets: IngestionDatasets;
  files: FileRepository;
  store: VectorStore;
  pool: ParserPool;
  log: Logger;
  /** The real paths of the folders a tenant may index (tenants/ingestion-roots.ts implements it). */
  roots: { of(tenantId: string): Promise<readonly string[]> };
  /** Told how many chunks got their vectors, as they are written (metrics count them). */
  onEmbedded?: (chunks: number) => void;
  /** The outbound module's fetch for a tenant, which an `openai:` embedder is called through (outbound/). */
  outbound: EmbedderOutbound;
}

/** What a running dataset needs while it ingests. */
interface Runtime {
  readonly datasetId: string;
  readonly tenantId: string;
  /** The ingestionPath as configured: what reasons name. */
  readonly configuredPath: string;
  /** Its real path, checked against the tenant's roots at start: watched, scanned and read from. */
  readonly root: string;
  /** The tenant's roots (real paths), refreshed whenever files are claimed. */
  roots: readonly string[];
  readonly fileTypes: ReadonlySet<string>;
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  readonly embedder: Embedder;
  /** Every change to the dataset's index goes through here, one at a time, each checked against the file's generation first. */
  readonly serial: SerialQueue;
  /** Files claimed and not yet searchable: what a stop, a deletion or a change cancels. */
  readonly jobs: Set<FileJob>;
  /** Searchable files waiting for their vectors (the second phase). */
  readonly lane: EmbeddingLane;
  readonly progress: { files: number; chunks: number; since: number };
  watcher?: FSWatcher;
  stopped: boolean;
}

/** One claimed file on its way through parsing and the keyword index. */
interface FileJob {
  readonly runtime: Runtime;
  readonly file: ClaimedFile;
  readonly controller: AbortController;
  done?: Promise<void>;
}

type CancelCause = 'removed' | 'changed' | 'stopped' | 'closed';

/** The reason a job's signal aborts with; what becomes of the file's row depends on the cause. */
class Cancelled extends Error {
  override readonly name = 'Cancelled';

  constructor(readonly why: CancelCause) {
    super(`indexing cancelled (${why})`);
  }
}

/**
 * Keeps each running `local_file` dataset's index equal to its folder: watches the folder, records every
 * file in `dataset_files` (the durable queue), and indexes queued files in two phases:
 * 1. parsed and chunked on a parse thread, its chunks written to the store (keyword index) in short
 *    transactions, hidden until they replace the file's old chunks at once: the file is `searchable`;
 * 2. its chunks embedded in slices and their vectors written as they come (embedding-lane.ts): `indexed`.
 * A file's text is in memory only during phase 1, which holds one of the few parse turns; phase 2 reads
 * the chunks back from the store a window at a time.
 *
 * Datasets take turns at every stage, so one huge file never starves another dataset: files are
 * claimed in rounds across datasets, a dataset's files are parsed on one thread while a second one is kept
 * for the other datasets (each file within a parse budget of time, pages and memory), and
 * embedding runs in slices of about a second that alternate between datasets (embedding-scheduler.ts).
 * Every file's work carries an AbortSignal: deleting the file, stopping or deleting its dataset, or
 * closing the engine cancels it within moments (the parse thread is replaced, waiting slices dropped).
 *
 * Races are settled by generations: every change seen on disk bumps the file's generation, and work
 * started on an older generation is dropped where its result is written (the check and the write run in
 * the dataset's serial queue). Whatever happens, the last change seen is the last one indexed.
 */
export class IngestionEngine {
  private readonly runtimes = new Map<string, Runtime>();
  private readonly starting = new Map<string, Promise<void>>();
  private readonly embedding: EmbeddingScheduler;
  private readonly parseTurns: TurnGate;
  private pumping: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** When a file last started or finished its keyword phase (see KEYWORD_FIRST_MS). */
  private keywordProgress = 0;
  private keywordTimer: ReturnType<typeof setTimeout> | undefined;
  private wake = false;
  private closed = false;

  constructor(private readonly deps: IngestionEngineDeps) {
    // Files waiting for the keyword index come first: they become searchable in seconds, while the
    // embedder would take both cores for minutes (see embeddingConcurrency).
    this.embedding = new EmbeddingScheduler({ concurrency: () => this.embeddingConcurrency(), slice: SLICE });
    // One file parsing per thread and one more ready to go (or being written): the pool's own queue
    // stays short, so the order of turns is decided here, fairly, and not by whoever queued first. A turn
    // lasts until the file is searchable, which bounds how many parsed files memory holds. A dataset holds
    // at most its lane's threads plus one such turn: the rest stay free for the other datasets, whose files
    // the pool's spare thread parses while this dataset's slow file holds its own (parser-pool.ts).
    this.parseTurns = new TurnGate(deps.pool.threadCount + 1, undefined, deps.pool.size + 1);
  }

  /** At start-up: every dataset that was ingesting resumes, and its folder is reconciled with the index. */
  async resumeAll(): Promise<void> {
    const active = await this.deps.datasets.listActive();
    await Promise.all(active.map((dataset) => this.start(dataset.id)));
  }

  /** Starts (or resumes) a dataset: status `starting`, then `running` once its folder scan is queued. */
  start(datasetId: string): Promise<void> {
    if (this.closed || this.runtimes.has(datasetId)) return Promise.resolve();
    let starting = this.starting.get(datasetId);
    if (!starting) {
      starting = this.startNow(datasetId).finally(() => this.starting.delete(datasetId));
      this.starting.set(datasetId, starting);
    }
    return starting;
  }

  private async startNow(datasetId: string): Promise<void> {
    const { datasets, files, store, config, log } = this.deps;
    const row = await datasets.getAnyTenant(datasetId);
    if (!row) return;
    await datasets.setStatus(datasetId, 'starting');
    let runtime: Runtime | undefined;
    try {
      const { configuration } = row;
      const configuredPath = configuration.ingestionPath;
      const folder = await this.checkFolder(row.tenant_id, configuredPath);
      if ('refused' in folder) {
        log.warn({ dataset: datasetId, reason: folder.refused }, 'dataset folder refused');
        await datasets.setStatus(datasetId, 'error', folder.refused);
        return;
      }
      const embedder = await datasetEmbedder(configuration, {
        dataDir: config.dataDir,
        allowDownload: config.allowModelDownload,
        outbound: await this.deps.outbound(row.tenant_id),
      });
      if (this.closed) return; // it resumes at the next start-up (its status is still `starting`)
      await store.createDatasetIndex(datasetId, embedder.dimension);
      await files.requeueInterrupted(datasetId);
      const serial = new SerialQueue();
      runtime = {
        datasetId,
        tenantId: row.tenant_id,
        configuredPath,
        root: folder.real,
        roots: folder.roots,
        fileTypes: new Set(configuration.fileTypes),
        chunkSize: configuration.chunkSize,
        chunkOverlap: configuration.chunkOverlap,
        embedder,
        serial,
        jobs: new Set(),
        lane: this.embeddingLane(datasetId, embedder, serial),
        progress: { files: 0, chunks: 0, since: performance.now() },
        stopped: false,
      };
      const current = runtime;
      // Watch first, then scan: a file saved while the scan runs is seen by one or the other.
      runtime.watcher = await watchFolder(runtime.root, runtime.fileTypes, {
        changed: (file) => void this.onChanged(current, file),
        removed: (path, folder) => void this.onRemoved(current, path, folder),
        error: (error) => log.warn({ dataset: datasetId, err: error }, 'watching the dataset folder failed'),
      });
      this.runtimes.set(datasetId, runtime);
      await this.reconcile(runtime);
      if (runtime.stopped || this.closed) return; // stopped (or the engine closed) while the folder was scanned
      await this.resumeEmbedding(runtime);
      await datasets.setStatus(datasetId, 'running');
      log.info({ dataset: datasetId, folder: runtime.root, embedder: embedder.id }, 'dataset ingestion started');
      this.kick();
    } catch (error) {
      if (this.closed && !runtime) return; // the database may be closed already
      log.error({ dataset: datasetId, err: error }, 'dataset could not start');
      if (runtime) await this.shutDown(runtime, 'stopped');
      await datasets.setStatus(datasetId, 'error', `the dataset could not start: ${errorMessage(error)}`);
    }
  }

  /**
   * The dataset folder's real path, checked against the tenant's roots now: the folder (or one above
   * it) may have been swapped for a symbolic link since the dataset was created or last started.
   */
  private async checkFolder(
    tenantId: string,
    configured: string,
  ): Promise<{ real: string; roots: readonly string[] } | { refused: string }> {
    const roots = await this.deps.roots.of(tenantId);
    let real: string;
    try {
      real = await realpath(configured);
    } catch {
      return { refused: `the folder '${configured}' does not exist or cannot be read` };
    }
    if (!isInsideAny(roots, real)) {
      const where = real === configured ? 'is' : `now resolves to '${real}',`;
      return { refused: `the folder '${configured}' ${where} outside this tenant's ingestion roots` };
    }
    const facts = await stat(real).catch(() => undefined);
    if (!facts?.isDirectory()) return { refused: `'${configured}' is not a folder` };
    return { real, roots };
  }

  /** Pauses a dataset: no watching, no indexing; its index stays searchable. Work in progress is cancelled. */
  async stop(datasetId: string, status: 'stopped' | null = 'stopped'): Promise<void> {
    // A dataset still scanning its folder is registered already: it stops at the next file, not after the scan.
    await this.stopRuntime(datasetId, 'stopped');
    await this.starting.get(datasetId);
    await this.stopRuntime(datasetId, 'stopped');
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
    await this.starting.get(datasetId);
    const runtime = this.runtimes.get(datasetId);
    if (runtime) {
      const folder = await this.checkFolder(runtime.tenantId, runtime.configuredPath);
      if ('refused' in folder) return this.refuse(runtime, folder.refused);
      if (folder.real !== runtime.root) {
        await this.shutDown(runtime, 'stopped');
        await this.deps.files.requeueAll(datasetId);
        return this.start(datasetId);
      }
      runtime.roots = folder.roots;
    }
    await this.deps.files.requeueAll(datasetId);
    runtime?.lane.forget(() => true);
    this.kick();
  }

  /** Cancels everything in progress (files go back to the queue) and stops every dataset; safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      const stopAll = () => Promise.all([...this.runtimes.keys()].map((datasetId) => this.stopRuntime(datasetId, 'closed')));
      await stopAll(); // running datasets, and those still scanning their folder
      // A dataset whose embedder is still loading (or whose model server does not answer) is not waited
      // for long: it never touches the database once the engine is closed, and resumes at the next start-up.
      await Promise.race([Promise.allSettled([...this.starting.values()]), delay(STARTING_WAIT_MS)]);
      await stopAll();
      await this.pumping;
      clearTimeout(this.keywordTimer);
      await this.deps.store.close();
    })();
    return this.closing;
  }

  /** The folder may no longer be read: everything stops, and the dataset shows why. */
  private async refuse(runtime: Runtime, reason: string): Promise<void> {
    this.deps.log.warn({ dataset: runtime.datasetId, reason }, 'dataset folder refused');
    await this.shutDown(runtime, 'stopped');
    await this.deps.datasets.setStatus(runtime.datasetId, 'error', reason);
  }

  private async shutDown(runtime: Runtime, cause: 'stopped' | 'closed'): Promise<void> {
    runtime.stopped = true;
    if (this.runtimes.get(runtime.datasetId) === runtime) this.runtimes.delete(runtime.datasetId);
    const jobs = [...runtime.jobs];
    for (const job of jobs) job.controller.abort(new Cancelled(cause));
    await runtime.watcher?.close();
    await Promise.allSettled([...jobs.map((job) => job.done), runtime.lane.stop()]);
    await runtime.serial.run(async () => undefined); // let a commit in progress finish
  }

  /** Cancels the jobs `matches` picks: their parsing stops, their waiting slices leave the line. */
  private cancelJobs(runtime: Runtime, cause: CancelCause, matches: (job: FileJob) => boolean): void {
    for (const job of runtime.jobs) if (matches(job)) job.controller.abort(new Cancelled(cause));
  }

  private async onChanged(runtime: Runtime, file: FileFacts): Promise<void> {
    if (runtime.stopped) return;
    try {
      if (!(await this.deps.files.seen(runtime.datasetId, file))) return;
      // Work on an older version is wasted: the new one is queued already.
      const generation = await this.deps.files.generationOf(runtime.datasetId, file.path);
      if (generation !== undefined) {
        this.cancelJobs(runtime, 'changed', (job) => job.file.path === file.path && job.file.generation < generation);
        runtime.lane.forget((waiting) => waiting.path === file.path && waiting.generation < generation);
      }
      this.kick();
    } catch (error) {
      this.deps.log.error({ dataset: runtime.datasetId, file: file.path, err: error }, 'recording a changed file failed');
    }
  }

  private async onRemoved(runtime: Runtime, path: string, folder: boolean): Promise<void> {
    if (runtime.stopped) return;
    // Cancelled first: a file being embedded stops now, not after its removal is written.
    const prefix = `${path}/`;
    const under = (file: string) => file === path || (folder && file.startsWith(prefix));
    this.cancelJobs(runtime, 'removed', (job) => under(job.file.path));
    runtime.lane.forget((waiting) => under(waiting.path));
    const { files } = this.deps;
    const paths = folder ? await files.livePathsUnder(runtime.datasetId, path) : [path];
    for (const removed of paths) await this.removeFile(runtime, removed);
  }

  /** Its chunks are hidden at once; their deletion follows in the background, in short transactions. */
  private removeFile(runtime: Runtime, path: string): Promise<void> {
    return runtime.serial.run(async () => {
      await this.deps.store.retireFile(runtime.datasetId, path);
      await this.deps.files.removed(runtime.datasetId, path);
    });
  }

  /**
   * Brings the index in line with the folder after a start or restart: new and changed files are
   * queued, files gone while knode was not watching are removed.
   */
  private async reconcile(runtime: Runtime): Promise<void> {
    const found = await scanFolder(runtime.root, runtime.fileTypes);
    // In batches, a turn between two: recorded one after the other, 5,000 files held the API for 0.8 s.
    for (let start = 0; start < found.length; start += SEEN_BATCH) {
      if (runtime.stopped || this.closed) return;
      await this.deps.files.seenAll(runtime.datasetId, found.slice(start, start + SEEN_BATCH));
      await nextTurn();
    }
    const present = new Set(found.map((file) => file.path));
    for (const path of await this.deps.files.livePaths(runtime.datasetId)) {
      if (runtime.stopped || this.closed) return;
      // A file created after the scan read its folder is on disk, just not in `found`.
      if (!present.has(path) && !existsSync(join(runtime.root, path))) await this.removeFile(runtime, path);
    }
  }

  /**
   * No slice is embedded while a file of a running dataset waits for (or is in) its keyword phase, as
   * long as that phase is moving: files become searchable first, and their vectors follow.
   */
  private embeddingConcurrency(): number {
    let keywordWork = false;
    for (const runtime of this.runtimes.values()) keywordWork ||= runtime.jobs.size > 0;
    const stalled = performance.now() - this.keywordProgress >= KEYWORD_FIRST_MS;
    if (!keywordWork || stalled || this.closed) return EMBED_CONCURRENCY;
    // Looked at again when the keyword phase may count as stalled, if no file finishes before then.
    this.keywordTimer ??= setTimeout(() => {
      this.keywordTimer = undefined;
      this.embedding.recheck();
    }, KEYWORD_FIRST_MS).unref();
    return 0;
  }

  /** Makes sure the queue is being worked; cheap to call often (every finished file calls it). */
  private kick(): void {
    if (this.closed) return;
    this.wake = true;
    this.pumping ??= this.pump()
      .catch((error) => this.deps.log.error({ err: error }, 'ingestion stopped unexpectedly'))
      .finally(() => {
        this.pumping = undefined;
        if (this.wake) this.kick();
      });
  }

  private async pump(): Promise<void> {
    while (this.wake && !this.closed) {
      this.wake = false;
      while (!this.closed && (await this.claimRound()) > 0);
    }
  }

  /**
   * One turn for every running dataset with room: it claims a few queued files (the oldest first) and
   * starts them. Rounds go on while anything was claimed; a finished file starts the next round.
   */
  private async claimRound(): Promise<number> {
    let claimed = 0;
    for (const runtime of [...this.runtimes.values()]) {
      const room = DATASET_FILES_IN_FLIGHT - runtime.jobs.size;
      if (runtime.stopped || room <= 0) continue;
      const files = await this.deps.files.claim([runtime.datasetId], Math.min(room, CLAIM_FILES));
      if (files.length === 0) continue;
      claimed += files.length;
      if (runtime.stopped || !(await this.refreshRoots(runtime))) {
        for (const file of files) await this.deps.files.release(file);
        continue;
      }
      for (const file of files) this.startJob(runtime, file);
    }
    return claimed;
  }

  /** The operator may have taken a root away from the tenant since the dataset started. */
  private async refreshRoots(runtime: Runtime): Promise<boolean> {
    const roots = await this.deps.roots.of(runtime.tenantId);
    if (runtime.stopped) return false;
    if (!isInsideAny(roots, runtime.root)) {
      await this.refuse(runtime, `the folder '${runtime.configuredPath}' is no longer inside this tenant's ingestion roots`);
      return false;
    }
    runtime.roots = roots;
    return true;
  }

  private startJob(runtime: Runtime, file: ClaimedFile): void {
    // Progress is measured from the moment work resumes, not from the last file hours ago.
    const { progress } = runtime;
    if (runtime.jobs.size === 0 && runtime.lane.size === 0 && progress.files === 0 && progress.chunks === 0)
      progress.since = performance.now();
    this.keywordProgress = performance.now();
    const job: FileJob = { runtime, file, controller: new AbortController() };
    runtime.jobs.add(job);
    job.done = this.runJob(job)
      .catch((error: unknown) =>
        this.deps.log.error({ dataset: runtime.datasetId, file: file.path, err: error }, 'indexing a file failed unexpectedly'),
      )
      .finally(() => {
        runtime.jobs.delete(job);
        this.keywordProgress = performance.now();
        this.logProgress(runtime);
        this.kick();
        this.embedding.recheck();
      });
  }

  /**
   * Phase 1: parse (taking turns on the parse threads, within the parse budget) and write the chunks to
   * the keyword index; the file is then searchable and waits in its dataset's embedding lane. Or record why not.
   */
  private async runJob(job: FileJob): Promise<void> {
    const { runtime, file } = job;
    const signal = job.controller.signal;
    try {
      const release = await this.parseTurns.acquire(runtime.datasetId, signal);
      try {
        const path = join(runtime.root, file.path);
        const prepared = await this.deps.pool.prepare(path, this.prepareOptions(runtime, file), signal, runtime.datasetId);
        if (prepared.unchanged) {
          const status = await runtime.serial.run(() => this.deps.files.unchanged(file));
          if (status === 'searchable') runtime.lane.add(file);
          return;
        }
        await this.writeKeywords(job, prepared);
      } finally {
        release();
      }
    } catch (error) {
      await this.settleFailure(job, error);
    }
  }

  /**
   * Writes the file's chunks hidden (in short transactions, cancellable between them), then, unless the
   * file changed or its work was cancelled meanwhile, makes them its chunks in place of the old ones.
   */
  private async writeKeywords(job: FileJob, prepared: PreparedFile): Promise<void> {
    const { runtime, file } = job;
    const { store, files } = this.deps;
    const signal = job.controller.signal;
    const source = chunkSource(file, prepared);
    const staged = await store.stage(runtime.datasetId, file.path, source, signal);
    let published = false;
    try {
      const searchable = await runtime.serial.run(async () => {
        signal.throwIfAborted();
        if ((await files.generationOf(file.datasetId, file.path)) !== file.generation) return false;
        published = await store.publish(staged);
        return published && (await files.searchable(file, prepared.hash, source.count));
      });
      if (!searchable) return;
      runtime.progress.files++;
      if (source.count > 0) runtime.lane.add(file);
    } finally {
      if (!published) await store.discard(staged);
    }
  }

  /** Phase 2 of a dataset: its searchable files' chunks are embedded and their vectors written, in order. */
  private embeddingLane(datasetId: string, embedder: Embedder, serial: SerialQueue): EmbeddingLane {
    const { store, files, log } = this.deps;
    const lane: EmbeddingLane = new EmbeddingLane({
      window: EMBED_WINDOW,
      windowsInFlight: EMBED_WINDOWS_IN_FLIGHT,
      read: (waiting, limits) =>
        store.unembeddedOf(
          datasetId,
          waiting.map(({ file, from }) => ({ fileKey: file.path, from })),
          limits,
        ),
      embed: (texts, signal) => this.embedding.embed(datasetId, embedder, texts, signal),
      // One window: its files' vectors in short transactions (VECTOR_ROWS), their progress in one statement.
      write: (parts) =>
        serial.run(async () => {
          const wanted = new Set(await files.stillSearchable(datasetId, [...new Set(parts.map((part) => part.file))]));
          const live = parts.filter((part) => wanted.has(part.file));
          const written = await store.addVectorsOf(
            datasetId,
            live.map(({ file, from, vectors }) => ({ fileKey: file.path, from, vectors })),
          );
          const progress = live.flatMap((part, index) => {
            const embedded = written[index]?.embedded;
            return embedded === undefined ? [] : [{ file: part.file, embedded, vectors: part.vectors.length }];
          });
          await files.embedded(datasetId, progress);
          this.deps.onEmbedded?.(progress.reduce((sum, part) => sum + part.vectors, 0));
          const runtime = this.runtimes.get(datasetId);
          if (runtime) {
            runtime.progress.chunks += progress.reduce((sum, part) => sum + part.vectors, 0);
            this.logProgress(runtime);
          }
        }),
      // The embedder failing is not the files' fault, but they cannot be indexed now (as before two phases).
      failed: async (failing, error) => {
        for (const file of failing) await this.fail(serial, { datasetId, ...file }, `embedding failed: ${errorMessage(error)}`);
      },
      unexpected: (error) => log.error({ dataset: datasetId, err: error }, 'embedding a file failed unexpectedly'),
      drained: () => {
        const runtime = this.runtimes.get(datasetId);
        if (runtime) this.logProgress(runtime);
      },
    });
    return lane;
  }

  /** At a dataset's start, its searchable files resume embedding in the order their chunks were written. */
  private async resumeEmbedding(runtime: Runtime): Promise<void> {
    const waiting = await this.deps.files.searchableFiles(runtime.datasetId);
    const order = new Map((await this.deps.store.filesToEmbed(runtime.datasetId)).map((path, index) => [path, index]));
    // A file missing from the store's list has every vector already (knode stopped just before it was marked indexed).
    const rank = (file: LaneFile) => order.get(file.path) ?? -1;
    for (const file of waiting.sort((a, b) => rank(a) - rank(b))) runtime.lane.add(file);
  }

  private prepareOptions(runtime: Runtime, file: ClaimedFile): PrepareOptions {
    return {
      chunkSize: runtime.chunkSize,
      chunkOverlap: runtime.chunkOverlap,
      knownHash: file.contentHash,
      folder: runtime.root,
      roots: runtime.roots,
      maxFileBytes: this.deps.config.maxFileBytes,
      maxTextBytes: this.deps.config.maxTextBytes,
    };
  }

  /**
   * A cancelled file is left as its cause says: stopped or closed → queued again for later; removed or
   * changed → its row has moved on already. Anything else is the file's failure, with the reason.
   */
  private async settleFailure(job: FileJob, error: unknown): Promise<void> {
    const { runtime, file } = job;
    const reason: unknown = job.controller.signal.reason;
    const cause = reason instanceof Cancelled ? reason.why : undefined;
    if (cause === 'removed' || cause === 'changed') return;
    if (cause === 'stopped' || cause === 'closed' || error instanceof ParserPoolClosedError) {
      await this.deps.files.release(file);
      return;
    }
    await this.fail(runtime.serial, file, errorMessage(error));
  }

  /** A file that cannot be indexed has no chunks: whatever an older version left is removed. */
  private fail(serial: SerialQueue, file: { datasetId: string; path: string; generation: number }, reason: string): Promise<void> {
    return serial.run(async () => {
      if ((await this.deps.files.generationOf(file.datasetId, file.path)) !== file.generation) return;
      await this.deps.store.retireFile(file.datasetId, file.path);
      await this.deps.files.failed(file, reason);
    });
  }

  /**
   * Files made searchable and chunks embedded per second, every few seconds while busy and once when the
   * dataset has nothing left to do; with the longest write transaction so far (the API waits that long at most).
   */
  private logProgress(runtime: Runtime): void {
    const { progress } = runtime;
    const elapsed = performance.now() - progress.since;
    if (progress.files === 0 && progress.chunks === 0) return;
    if ((runtime.jobs.size > 0 || runtime.lane.size > 0) && elapsed < PROGRESS_LOG_MS) return;
    const seconds = elapsed / 1000;
    this.deps.log.info(
      {
        dataset: runtime.datasetId,
        files: progress.files,
        chunks: progress.chunks,
        seconds: Number(seconds.toFixed(2)),
        chunks_per_second: Math.round(progress.chunks / seconds),
        longest_write_ms: Math.round(this.deps.store.longestWriteMs),
      },
      'ingested files',
    );
    progress.files = 0;
    progress.chunks = 0;
    progress.since = performance.now();
  }
}

/** The store's rows for a file, made as they are written: each chunk with the metadata search shows. */
function chunkSource(file: ClaimedFile, prepared: PreparedFile): ChunkSource {
  const fileType = extname(file.path).slice(1).toLowerCase();
  const { chunks, title } = prepared;
  return {
    count: chunks.length,
    chunk: (index) => {
      const chunk = chunks[index] as PreparedFile['chunks'][number];
      return {
        content: chunk.text,
        metadata: {
          source: file.path,
          file_type: fileType,
          chunk_index: chunk.chunk_index,
          ...(chunk.page !== undefined ? { page: chunk.page } : {}),
          ...(title ? { title } : {}),
        },
      };
    },
  };
}

/** A timer that does not keep the process alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
