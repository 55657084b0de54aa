import type { Logger } from 'pino';
import { errorMessage } from '../domain/errors.ts';
import type { Embedder } from '../embeddings/embedder.ts';
import { type ChunkVectors, embedChunks } from '../embeddings/pieces.ts';
import type { SerialQueue } from '../util/serial-queue.ts';
import type { VectorStore } from '../vectors/store.ts';
import { failFile } from './dataset-runtime.ts';
import { EmbeddingLane, type EmbeddingLaneDeps, type LaneFile, type WindowLimits } from './embedding-lane.ts';
import { EmbeddingScheduler, type SliceLimits } from './embedding-scheduler.ts';
import type { FileRepository } from './files-repository.ts';
import { PieceBackfill } from './piece-backfill.ts';
import type { ProgressLog } from './progress-log.ts';
import { SharedEmbedding, type SharedEmbeddingDeps } from './shared-embedding.ts';

/** What cluster mode adds for embedding shared by replicas (shared-embedding.ts); services.ts wires it. */
export type SharedWindows = Pick<SharedEmbeddingDeps, 'windows' | 'db' | 'datasets' | 'embedderOf' | 'holds' | 'pollMs'>;

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

export interface EmbeddingPhaseDeps {
  readonly files: FileRepository;
  readonly store: VectorStore;
  readonly log: Logger;
  /** Told how many chunks got their vectors, as they are written (metrics count them). */
  readonly onEmbedded?: (chunks: number) => void;
  /** Whether embedding must wait now (keyword-first.ts); asked before each slice starts. */
  readonly holdsEmbedding: () => boolean;
  /** Cluster mode: windows of every running dataset embedded by each replica with its embedder (shared-embedding.ts). */
  readonly shared?: SharedWindows;
}

/**
 * The second phase of indexing: each running dataset's searchable files get their vectors, in the order
 * they became searchable. A dataset's lane (embedding-lane.ts) reads their chunks back from the store a
 * window at a time and writes each window's vectors as they come; the one scheduler here
 * (embedding-scheduler.ts) embeds every lane's texts in slices that take turns across datasets, and
 * starts none while the keyword-first gate holds embedding back. A file with all its vectors is `indexed`.
 */
export class EmbeddingPhase {
  private readonly scheduler: EmbeddingScheduler;
  /** Cluster mode only: this replica's share of every running dataset's windows. */
  readonly shared: SharedEmbedding | undefined;
  /** Cluster mode: the progress log of each dataset whose runtime runs here, for the windows written here. */
  private readonly progressOf = new Map<string, () => ProgressLog | undefined>();

  constructor(private readonly deps: EmbeddingPhaseDeps) {
    this.scheduler = new EmbeddingScheduler({ concurrency: () => (deps.holdsEmbedding() ? 0 : EMBED_CONCURRENCY), slice: SLICE });
    this.shared =
      deps.shared &&
      new SharedEmbedding({
        ...deps.shared,
        store: deps.store,
        files: deps.files,
        log: deps.log,
        embed: (datasetId, embedder, texts, signal) => this.embedChunks(datasetId, embedder, texts, signal),
        mayEmbed: () => !deps.holdsEmbedding(),
        ...(deps.onEmbedded ? { onEmbedded: deps.onEmbedded } : {}),
        progressOf: (datasetId) => this.progressOf.get(datasetId)?.(),
        window: EMBED_WINDOW,
        windowsInFlight: EMBED_WINDOWS_IN_FLIGHT,
      });
  }

  /** Each chunk's vectors, one per piece its embedder can read (embeddings/pieces.ts), through the scheduler. */
  private embedChunks(datasetId: string, embedder: Embedder, texts: string[], signal: AbortSignal): Promise<ChunkVectors[]> {
    return embedChunks(texts, embedder.window, (pieces) => this.scheduler.embed(datasetId, embedder, pieces, signal));
  }

  /**
   * Whole-chunk vectors for the dataset's chunks indexed before them, made in the background through the
   * scheduler (piece-backfill.ts); nothing to do for an index in the current layout.
   */
  piecesFor(datasetId: string, embedder: Embedder): PieceBackfill {
    return new PieceBackfill({
      datasetId,
      embedder,
      store: this.deps.store,
      log: this.deps.log,
      window: EMBED_WINDOW,
      embed: (texts, signal) => this.scheduler.embed(datasetId, embedder, texts, signal),
    });
  }

  /** Starts cluster mode's shared embedding (once the engine that asks `holdsEmbedding` is whole). */
  start(): void {
    this.shared?.start();
  }

  /** Starts slices that were held back, if embedding may go on now (a file left its keyword phase, the gate's timer). */
  recheck(): void {
    this.scheduler.recheck();
    this.shared?.poke();
  }

  /** Stops cluster mode's shared embedding (a single node's lanes stop with their datasets). */
  async close(): Promise<void> {
    await this.shared?.stop();
  }

  /**
   * A dataset's lane: its searchable files' chunks embedded and their vectors written, in order, through
   * the dataset's serial queue; `progress` is the dataset's progress log at the time of writing, if it runs.
   */
  laneFor(datasetId: string, embedder: Embedder, serial: SerialQueue, progress: () => ProgressLog | undefined): EmbeddingLane {
    if (this.shared) return this.clusterLaneFor(datasetId, embedder, serial, progress, this.shared);
    return new EmbeddingLane(this.laneDeps(datasetId, embedder, serial, progress));
  }

  /** What a lane of the dataset does: read its files' chunks, embed them, write their vectors, in order. */
  private laneDeps(datasetId: string, embedder: Embedder, serial: SerialQueue, progress: () => ProgressLog | undefined): EmbeddingLaneDeps {
    const { store, files, log } = this.deps;
    return {
      window: EMBED_WINDOW,
      windowsInFlight: EMBED_WINDOWS_IN_FLIGHT,
      read: (waiting, limits) =>
        store.unembeddedOf(
          datasetId,
          waiting.map(({ file, from }) => ({ fileKey: file.path, from })),
          limits,
        ),
      embed: (texts, signal) => this.embedChunks(datasetId, embedder, texts, signal),
      // One window: its files' vectors in short transactions (VECTOR_ROWS), their progress in one statement.
      write: (parts) =>
        serial.run(async () => {
          const wanted = new Set(await files.stillSearchable(datasetId, [...new Set(parts.map((part) => part.file))]));
          const live = parts.filter((part) => wanted.has(part.file));
          const written = await store.addVectorsOf(
            datasetId,
            live.map(({ file, from, vectors }) => ({ fileKey: file.path, from, vectors })),
          );
          const embedded = live.flatMap((part, index) => {
            const count = written[index]?.embedded;
            return count === undefined ? [] : [{ file: part.file, embedded: count, vectors: part.vectors.length }];
          });
          await files.embedded(datasetId, embedded);
          const chunks = embedded.reduce((sum, part) => sum + part.vectors, 0);
          this.deps.onEmbedded?.(chunks);
          const running = progress();
          if (running) {
            running.embedded(chunks);
            running.report();
          }
        }),
      // The embedder failing is not the files' fault, but they cannot be indexed now (as before two phases).
      failed: async (failing, error) => {
        for (const file of failing) await failFile(this.deps, serial, { datasetId, ...file }, `embedding failed: ${errorMessage(error)}`);
      },
      unexpected: (error) => log.error({ dataset: datasetId, err: error }, 'embedding a file failed unexpectedly'),
      drained: () => progress()?.report(),
    };
  }

  /**
   * Cluster mode's lane of a dataset run here: its files' windows are embedded by shared-embedding.ts (on
   * every replica with the embedder, this one included), so the lane reads back no text. It only marks
   * `indexed` a file whose chunks all have their vectors already (knode stopped between the last write and
   * the mark, as the single node's lane does), through the same write; any other file is left to the windows.
   */
  private clusterLaneFor(
    datasetId: string,
    embedder: Embedder,
    serial: SerialQueue,
    progress: () => ProgressLog | undefined,
    shared: SharedEmbedding,
  ): EmbeddingLane {
    this.progressOf.set(datasetId, progress);
    return new EmbeddingLane({
      ...this.laneDeps(datasetId, embedder, serial, progress),
      read: async (waiting) => {
        shared.poke();
        const answers = [];
        for (const { file } of waiting) {
          const [answer] = await this.deps.store.unembeddedOf(datasetId, [{ fileKey: file.path, from: undefined }], {
            texts: 1,
            characters: 1,
          });
          answers.push(answer && answer.rows.length === 0 ? answer : undefined);
        }
        return answers;
      },
    });
  }

  /** At a dataset's start, its searchable files resume embedding in the order their chunks were written. */
  async resume(datasetId: string, lane: EmbeddingLane): Promise<void> {
    const waiting = await this.deps.files.searchableFiles(datasetId);
    const order = new Map((await this.deps.store.filesToEmbed(datasetId)).map((path, index) => [path, index]));
    // A file missing from the store's list has every vector already (knode stopped just before it was marked indexed).
    const rank = (file: LaneFile) => order.get(file.path) ?? -1;
    for (const file of waiting.sort((a, b) => rank(a) - rank(b))) lane.add(file);
  }
}
