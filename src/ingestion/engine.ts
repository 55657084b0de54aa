import type { FSWatcher } from 'chokidar';
import { existsSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DatasetRepository } from '../datasets/repository.ts';
import { SerialQueue } from '../util/serial-queue.ts';
import { datasetEmbedder, type Embedder } from '../embeddings/embedder.ts';
import type { SecretBox } from '../security/secret-box.ts';
import { openSecrets } from '../security/secret-config.ts';
import type { ChunkInput, VectorStore } from '../vectors/store.ts';
import type { ClaimedFile, FileRepository } from './files-repository.ts';
import { type FileFacts, scanFolder } from './folder.ts';
import type { PreparedFile } from './parse-worker.ts';
import { type ParserPool, ParserPoolClosedError } from './parser-pool.ts';
import { watchFolder } from './watcher.ts';

/** Files claimed at once: their parsing (on the parse thread) overlaps the embedding of the ones before. */
const BATCH_FILES = 16;
/** Chunks embedded in one call: large enough for the embedder's own batching to pay off. */
const EMBED_BATCH_CHUNKS = 64;

export interface IngestionEngineDeps {
  config: Config;
  datasets: DatasetRepository;
  files: FileRepository;
  store: VectorStore;
  pool: ParserPool;
  box: SecretBox;
  log: Logger;
  /** The real paths of the folders a tenant may index (tenants/ingestion-roots.ts). */
  rootsOf(tenantId: string): Promise<readonly string[]>;
}

/** What a running dataset needs while it ingests. */
interface Runtime {
  readonly datasetId: string;
  readonly root: string;
  readonly fileTypes: ReadonlySet<string>;
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  readonly embedder: Embedder;
  /** Every change to the dataset's index goes through here, one at a time (see `commit`). */
  readonly serial: SerialQueue;
  watcher?: FSWatcher;
  stopped: boolean;
}

type Outcome = { file: ClaimedFile; prepared: PreparedFile } | { file: ClaimedFile; error: unknown };

/**
 * Keeps each running `local_file` dataset's index equal to its folder: watches the folder, records every
 * file in `dataset_files` (the durable queue), and indexes queued files in batches: parsed and chunked
 * on the parse thread, embedded, then written in one transaction per file.
 *
 * Races are settled by generations: every change seen on disk bumps the file's generation, and work
 * started on an older generation is dropped at commit, where the check and the write run in the
 * dataset's serial queue. Whatever happens, the last change seen is the last one indexed.
 */
export class IngestionEngine {
  private readonly runtimes = new Map<string, Runtime>();
  private readonly starting = new Map<string, Promise<void>>();
  private pumping: Promise<void> | undefined;
  private wake = false;
  private closed = false;

  constructor(private readonly deps: IngestionEngineDeps) {}

  /** At start-up: every dataset that was ingesting resumes, and its folder is reconciled with the index. */
  async resumeAll(): Promise<void> {
    const active = await this.deps.datasets.listActive();
    await Promise.all(active.map((dataset) => this.start(dataset.id)));
  }

  isRunning(datasetId: string): boolean {
    return this.runtimes.has(datasetId);
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
    const { datasets, files, store, box, config, log } = this.deps;
    const row = await datasets.getAnyTenant(datasetId);
    if (!row) return;
    await datasets.setStatus(datasetId, 'starting');
    let runtime: Runtime | undefined;
    try {
      const configuration = openSecrets(JSON.parse(row.configuration), box);
      const embedder = await datasetEmbedder(configuration, { dataDir: config.dataDir, allowDownload: config.allowModelDownload });
      await store.createDatasetIndex(datasetId, embedder.dimension);
      await files.requeueInterrupted(datasetId);
      runtime = {
        datasetId,
        root: String(configuration.ingestionPath),
        fileTypes: new Set(String(configuration.fileTypes).split(',')),
        chunkSize: Number(configuration.chunkSize),
        chunkOverlap: Number(configuration.chunkOverlap),
        embedder,
        serial: new SerialQueue(),
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
      await datasets.setStatus(datasetId, 'running');
      log.info({ dataset: datasetId, folder: runtime.root, embedder: embedder.id }, 'dataset ingestion started');
      this.kick();
    } catch (error) {
      log.error({ dataset: datasetId, err: error }, 'dataset could not start');
      if (runtime) await this.shutDown(runtime);
      await datasets.setStatus(datasetId, 'error');
    }
  }

  /** Pauses a dataset: no watching, no indexing; its index stays searchable. */
  async stop(datasetId: string, status: 'stopped' | null = 'stopped'): Promise<void> {
    await this.starting.get(datasetId);
    const runtime = this.runtimes.get(datasetId);
    if (runtime) await this.shutDown(runtime);
    if (status) await this.deps.datasets.setStatus(datasetId, status);
  }

  /** Before a dataset is deleted: stops it and drops its index. */
  async remove(datasetId: string): Promise<void> {
    await this.stop(datasetId, null);
    await this.deps.store.dropDatasetIndex(datasetId);
  }

  /** Indexes every file again from scratch (e.g. after changing the embedder's model files). */
  async reindex(datasetId: string): Promise<void> {
    await this.deps.files.requeueAll(datasetId);
    this.kick();
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.starting.values()]);
    await Promise.all([...this.runtimes.values()].map((runtime) => this.shutDown(runtime)));
    await this.pumping;
  }

  private async shutDown(runtime: Runtime): Promise<void> {
    runtime.stopped = true;
    this.runtimes.delete(runtime.datasetId);
    await runtime.watcher?.close();
    await runtime.serial.run(async () => undefined); // let a commit in progress finish
  }

  private async onChanged(runtime: Runtime, file: FileFacts): Promise<void> {
    if (runtime.stopped) return;
    try {
      if (await this.deps.files.seen(runtime.datasetId, file)) this.kick();
    } catch (error) {
      this.deps.log.error({ dataset: runtime.datasetId, file: file.path, err: error }, 'recording a changed file failed');
    }
  }

  private async onRemoved(runtime: Runtime, path: string, folder: boolean): Promise<void> {
    if (runtime.stopped) return;
    const { files } = this.deps;
    const paths = folder ? await files.livePathsUnder(runtime.datasetId, path) : [path];
    for (const removed of paths) await this.removeFile(runtime, removed);
  }

  private removeFile(runtime: Runtime, path: string): Promise<void> {
    return runtime.serial.run(async () => {
      await this.deps.store.deleteFileChunks(runtime.datasetId, path);
      await this.deps.files.removed(runtime.datasetId, path);
    });
  }

  /**
   * Brings the index in line with the folder after a start or restart: new and changed files are
   * queued, files gone while knode was not watching are removed.
   */
  private async reconcile(runtime: Runtime): Promise<void> {
    const found = await scanFolder(runtime.root, runtime.fileTypes);
    for (const file of found) await this.deps.files.seen(runtime.datasetId, file);
    const present = new Set(found.map((file) => file.path));
    for (const path of await this.deps.files.livePaths(runtime.datasetId)) {
      // A file created after the scan read its folder is on disk, just not in `found`.
      if (!present.has(path) && !existsSync(join(runtime.root, path))) await this.removeFile(runtime, path);
    }
  }

  /** Makes sure the queue is being worked; cheap to call often. */
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
      // Two batches in flight: while one is embedded, the next is already parsed and its embedding queued,
      // so the embedder never waits for parsing or for the database.
      let current: Promise<void> | undefined;
      for (;;) {
        const batch = await this.deps.files.claim([...this.runtimes.keys()], BATCH_FILES);
        if (batch.length === 0) break;
        const next = this.processBatch(batch).catch((error: unknown) => {
          this.deps.log.error({ err: error }, 'an ingestion batch failed');
        });
        await current;
        current = next;
      }
      await current;
    }
  }

  private async processBatch(batch: ClaimedFile[]): Promise<void> {
    const datasetId = batch[0]?.datasetId;
    const runtime = datasetId ? this.runtimes.get(datasetId) : undefined;
    if (!runtime) {
      for (const file of batch) await this.deps.files.release(file);
      return;
    }
    const started = performance.now();
    // Every file is handed to the parse thread at once; embedding starts as soon as enough chunks are ready.
    const outcomes = batch.map((file) => this.prepare(runtime, file));
    let waiting: { file: ClaimedFile; prepared: PreparedFile }[] = [];
    let waitingChunks = 0;
    let chunks = 0;
    for (const pending of outcomes) {
      const outcome = await pending;
      if (runtime.stopped) {
        await this.deps.files.release(outcome.file);
        continue;
      }
      if ('error' in outcome) {
        if (outcome.error instanceof ParserPoolClosedError) await this.deps.files.release(outcome.file);
        else await this.fail(runtime, outcome.file, messageOf(outcome.error));
      } else if (outcome.prepared.unchanged) {
        await runtime.serial.run(() => this.deps.files.unchanged(outcome.file));
      } else {
        waiting.push(outcome);
        waitingChunks += outcome.prepared.chunks.length;
        if (waitingChunks >= EMBED_BATCH_CHUNKS) {
          chunks += await this.embedAndCommit(runtime, waiting);
          waiting = [];
          waitingChunks = 0;
        }
      }
    }
    if (waiting.length > 0) chunks += await this.embedAndCommit(runtime, waiting);
    const seconds = (performance.now() - started) / 1000;
    this.deps.log.info(
      { dataset: runtime.datasetId, files: batch.length, chunks, seconds: Number(seconds.toFixed(2)), chunks_per_second: Math.round(chunks / seconds) },
      'ingested a batch',
    );
  }

  private async prepare(runtime: Runtime, file: ClaimedFile): Promise<Outcome> {
    const path = join(runtime.root, file.path);
    try {
      // The watcher and scanner skip links, but a file can be replaced by one afterwards: never follow it.
      const facts = await lstat(path);
      if (!facts.isFile()) throw new Error(facts.isSymbolicLink() ? 'symbolic links are not indexed' : 'not a regular file');
      const prepared = await this.deps.pool.prepare(path, {
        chunkSize: runtime.chunkSize,
        chunkOverlap: runtime.chunkOverlap,
        knownHash: file.contentHash,
      });
      return { file, prepared };
    } catch (error) {
      return { file, error };
    }
  }

  /** Embeds the chunks of several files in one go, then writes each file's chunks in its own transaction. */
  private async embedAndCommit(runtime: Runtime, items: { file: ClaimedFile; prepared: PreparedFile }[]): Promise<number> {
    const texts = items.flatMap((item) => item.prepared.chunks.map((chunk) => chunk.text));
    let vectors: Float32Array[];
    try {
      vectors = await runtime.embedder.embed(texts);
    } catch (error) {
      for (const item of items) await this.fail(runtime, item.file, `embedding failed: ${messageOf(error)}`);
      return 0;
    }
    let offset = 0;
    let written = 0;
    for (const { file, prepared } of items) {
      const fileType = extname(file.path).slice(1).toLowerCase();
      const chunks: ChunkInput[] = prepared.chunks.map((chunk, index) => ({
        content: chunk.text,
        metadata: {
          source: file.path,
          file_type: fileType,
          chunk_index: chunk.chunk_index,
          ...(chunk.page !== undefined ? { page: chunk.page } : {}),
          ...(prepared.title ? { title: prepared.title } : {}),
        },
        embedding: vectors[offset + index] as Float32Array,
      }));
      offset += chunks.length;
      if (await this.commit(runtime, file, chunks, prepared.hash)) written += chunks.length;
    }
    return written;
  }

  /** Writes a file's chunks, unless the file changed (or the dataset stopped) while they were made. */
  private commit(runtime: Runtime, file: ClaimedFile, chunks: ChunkInput[], hash: string): Promise<boolean> {
    return runtime.serial.run(async () => {
      if (runtime.stopped) {
        await this.deps.files.release(file);
        return false;
      }
      if ((await this.deps.files.generationOf(file.datasetId, file.path)) !== file.generation) return false;
      await this.deps.store.replaceFileChunks(file.datasetId, file.path, chunks);
      return this.deps.files.indexed(file, hash, chunks.length);
    });
  }

  /** A file that cannot be indexed has no chunks: whatever an older version left is removed. */
  private fail(runtime: Runtime, file: ClaimedFile, reason: string): Promise<void> {
    return runtime.serial.run(async () => {
      if ((await this.deps.files.generationOf(file.datasetId, file.path)) !== file.generation) return;
      await this.deps.store.deleteFileChunks(file.datasetId, file.path);
      await this.deps.files.failed(file, reason);
    });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
