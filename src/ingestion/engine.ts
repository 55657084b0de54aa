import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { EmbedderOutbound } from '../embeddings/embedder.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import type { FencingLease, VectorStore } from '../vectors/store.ts';
import { ClaimLoop } from './claim-loop.ts';
import { DatasetRuntimes, type TenantRoots } from './dataset-runtime.ts';
import { EmbeddingPhase, type SharedWindows } from './embedding-phase.ts';
import type { FileRepository } from './files-repository.ts';
import { FolderSync } from './folder-sync.ts';
import type { KeyedSources } from './keyed-sources.ts';
import { KeywordFirstGate } from './keyword-first.ts';
import { KeywordPhase } from './keyword-phase.ts';
import type { ParserPool } from './parser-pool.ts';
import type { IngestionDatasets } from './ports.ts';
import type { SelectedEntry } from './selection-entries.ts';

export interface IngestionEngineDeps {
  config: Config;
  datasets: IngestionDatasets;
  files: FileRepository;
  store: VectorStore;
  pool: ParserPool;
  log: Logger;
  /** The real paths of the folders a tenant may index (tenants/ingestion-roots.ts implements it). */
  roots: TenantRoots;
  /** Told how many chunks got their vectors, as they are written (metrics count them). */
  onEmbedded?: (chunks: number) => void;
  /** The outbound module's fetch for a tenant, which an `openai:` embedder is called through (outbound/). */
  outbound: EmbedderOutbound;
  /** The datasets whose documents are kept by key instead of read from a folder (an `rss` dataset's items, feeds/). */
  keyed?: KeyedSources;
  /** Cluster mode: the embedding windows every replica with a dataset's embedder shares (embedding-phase.ts). */
  sharedEmbedding?: SharedWindows;
  /** Dates a changed file the watcher could not stat (watcher.ts); the system's by default. */
  clock?: Clock;
}

/**
 * Keeps each running `local_file` dataset's index equal to its folder: watches the folder, records every
 * file in `dataset_files` (the durable queue), and indexes queued files in two phases:
 * 1. the keyword phase (keyword-phase.ts): parsed and chunked on a parse thread, its chunks written to the
 *    store (keyword index) in short transactions, hidden until they replace the file's old chunks at once:
 *    the file is `searchable`;
 * 2. the embedding phase (embedding-phase.ts): its chunks embedded in slices and their vectors written as
 *    they come: `indexed`.
 * Keyword first (keyword-first.ts): no file is embedded while files are in their keyword phase, unless
 * that phase has stalled.
 *
 * This class is the facade that the datasets service and the start-up call; it only wires the parts:
 * dataset-runtime.ts (a running dataset, started, stopped and reindexed), folder-sync.ts (the watcher's
 * events and the scans), claim-loop.ts (the queue claimed in turns across datasets), the two phases, the
 * keyword-first gate and each dataset's progress-log.ts.
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
  /** Aborted once, when the engine closes: every part stops taking new work. */
  private readonly closed = new AbortController();
  private readonly runtimes: DatasetRuntimes;
  private readonly keywordFirst: KeywordFirstGate;
  private readonly embedding: EmbeddingPhase;
  private readonly claims: ClaimLoop;
  private closing: Promise<void> | undefined;

  constructor(private readonly deps: IngestionEngineDeps) {
    const { config, datasets, files, store, pool, log, roots, outbound, onEmbedded, keyed, sharedEmbedding, clock = systemClock } = deps;
    const closing = this.closed.signal;
    this.keywordFirst = new KeywordFirstGate({
      inKeywordPhase: () => this.runtimes.inKeywordPhase(),
      recheck: () => this.embedding.recheck(),
      closing,
    });
    this.embedding = new EmbeddingPhase({
      files,
      store,
      log,
      onEmbedded,
      holdsEmbedding: () => this.keywordFirst.holdsEmbedding(),
      ...(sharedEmbedding ? { shared: sharedEmbedding } : {}),
    });
    const keywords = new KeywordPhase({
      config,
      files,
      store,
      pool,
      log,
      keywordFirst: this.keywordFirst,
      finished: () => {
        this.claims.kick();
        this.embedding.recheck();
      },
    });
    this.claims = new ClaimLoop({
      files,
      roots,
      log,
      closing,
      running: () => this.runtimes.running(),
      refuse: (runtime, reason) => this.runtimes.refuse(runtime, reason),
      claimed: (runtime, file) => keywords.start(runtime, file),
    });
    const folders = new FolderSync({ files, store, log, clock, closing, queued: () => this.claims.kick() });
    this.runtimes = new DatasetRuntimes({
      config,
      datasets,
      files,
      store,
      log,
      roots,
      outbound,
      closing,
      folders,
      embedding: this.embedding,
      kick: () => this.claims.kick(),
      ...(keyed ? { keyed } : {}),
    });
    // Last: its first round asks the keyword-first gate, which asks the runtimes made just above.
    this.embedding.start();
  }

  /** At start-up: every dataset that was ingesting resumes, and its folder is reconciled with the index. */
  resumeAll(): Promise<void> {
    return this.runtimes.resumeAll();
  }

  /**
   * Starts (or resumes) a dataset: status `starting`, then `running` once its folder scan is queued. Its
   * runtime's writes are fenced with `lease`, the dataset's (coordination/dataset-leases.ts): refused, and
   * the runtime stopped, once another replica took the dataset over.
   */
  start(datasetId: string, lease?: FencingLease): Promise<void> {
    return this.runtimes.start(datasetId, lease);
  }

  /** Pauses a dataset: no watching, no indexing; its index stays searchable. Work in progress is cancelled. */
  stop(datasetId: string, status: 'stopped' | null = 'stopped'): Promise<void> {
    return this.runtimes.stop(datasetId, status);
  }

  /** Before a dataset is deleted: stops it and drops its index. */
  remove(datasetId: string): Promise<void> {
    return this.runtimes.remove(datasetId);
  }

  /**
   * Indexes every file again from scratch (e.g. after changing the embedder's model files). The folder
   * is checked again first: one that now resolves outside the tenant's roots stops the dataset
   * (status `error`), and one that now leads to another allowed folder is watched and read from there.
   */
  reindex(datasetId: string): Promise<void> {
    return this.runtimes.reindex(datasetId);
  }

  /**
   * The dataset's selection of files and folders changed: entries added are watched and scanned, entries
   * removed lose their files' chunks; the other entries go on as they were.
   */
  selectionChanged(datasetId: string, removed: readonly SelectedEntry[] = []): Promise<void> {
    return this.runtimes.selectionChanged(datasetId, removed);
  }

  /** Cancels everything in progress (files go back to the queue) and stops every dataset; safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed.abort();
      await this.runtimes.closeAll();
      await this.embedding.close();
      await this.claims.idle();
      await this.deps.store.close();
    })();
    return this.closing;
  }
}
