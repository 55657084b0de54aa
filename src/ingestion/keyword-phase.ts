import { extname } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { errorMessage } from '../domain/errors.ts';
import type { ChunkSource, VectorStore } from '../vectors/store.ts';
import { Cancelled, type DatasetRuntime, type FileJob, failFile, leaseLost } from './dataset-runtime.ts';
import type { ClaimedFile, FileRepository } from './files-repository.ts';
import type { KeyedDocument } from './keyed-sources.ts';
import type { KeywordFirstGate } from './keyword-first.ts';
import type { PreparedFile, PrepareOptions } from './parse-worker.ts';
import { type ParserPool, ParserPoolClosedError } from './parser-pool.ts';
import { locate } from './selection-entries.ts';
import { TurnGate } from './turn-gate.ts';

export interface KeywordPhaseDeps {
  readonly config: Config;
  readonly files: FileRepository;
  readonly store: VectorStore;
  readonly pool: ParserPool;
  readonly log: Logger;
  /** Told when a file starts or finishes its keyword phase: embedding waits while files are in it. */
  readonly keywordFirst: KeywordFirstGate;
  /** A file left its keyword phase (searchable, failed or cancelled): more files may be claimed, and embedding may go on. */
  finished(): void;
}

/**
 * The first phase of indexing a claimed file: parsed and chunked on a parse thread (taking turns across
 * datasets, within the parse budget), its chunks written to the store's keyword index in short
 * transactions, hidden until they replace the file's old chunks at once. The file is then `searchable`
 * and waits in its dataset's embedding lane for its vectors; or it is `failed`, with the reason. A file's
 * text is in memory only during this phase, which holds one of the few parse turns.
 */
export class KeywordPhase {
  private readonly parseTurns: TurnGate;

  constructor(private readonly deps: KeywordPhaseDeps) {
    // One file parsing per thread and one more ready to go (or being written): the pool's own queue
    // stays short, so the order of turns is decided here, fairly, and not by whoever queued first. A turn
    // lasts until the file is searchable, which bounds how many parsed files memory holds. A dataset holds
    // at most its lane's threads plus one such turn: the rest stay free for the other datasets, whose files
    // the pool's spare thread parses while this dataset's slow file holds its own (parser-pool.ts).
    this.parseTurns = new TurnGate(deps.pool.threadCount + 1, undefined, deps.pool.size + 1);
  }

  /** Starts a claimed file's keyword phase; it is one of the dataset's jobs until the phase is over. */
  start(runtime: DatasetRuntime, file: ClaimedFile): void {
    const { keywordFirst, log } = this.deps;
    runtime.progress.resuming();
    keywordFirst.moved();
    const job: FileJob = { runtime, file, controller: new AbortController() };
    runtime.jobs.add(job);
    job.done = this.run(job)
      .catch((error: unknown) =>
        log.error({ dataset: runtime.datasetId, file: file.path, err: error }, 'indexing a file failed unexpectedly'),
      )
      .finally(() => {
        runtime.jobs.delete(job);
        keywordFirst.moved();
        runtime.progress.report();
        this.deps.finished();
      });
  }

  /** Parses the file on its turn, then writes its keywords; or records why not. */
  private async run(job: FileJob): Promise<void> {
    const { runtime, file } = job;
    const signal = job.controller.signal;
    try {
      const release = await this.parseTurns.acquire(runtime.datasetId, signal);
      try {
        let prepared: PreparedFile;
        let metadata: KeyedDocument['metadata'] | undefined;
        if (runtime.keyed) {
          // A document kept by key (a feed's item) is handed over as bytes, with the metadata its chunks cite.
          const document = await runtime.keyed.read(runtime.datasetId, file.path);
          signal.throwIfAborted();
          metadata = document.metadata;
          const options = this.prepareOptions(runtime, file);
          prepared = await this.deps.pool.prepareBytes(document.name, document.bytes, options, signal, runtime.datasetId);
        } else {
          // Where its entry of the selection has it (selection-entries.ts); an entry just removed has none.
          const located = locate(runtime.entries, file.path);
          if (!located) throw new Cancelled('removed');
          const options = { ...this.prepareOptions(runtime, file), folder: located.folder };
          prepared = await this.deps.pool.prepare(located.absolute, options, signal, runtime.datasetId);
        }
        if (prepared.unchanged) {
          const status = await runtime.serial.run(() => this.deps.files.unchanged(file, runtime.lease));
          if (status === 'searchable') runtime.lane.add(file);
          return;
        }
        await this.writeKeywords(job, prepared, metadata);
      } finally {
        release();
      }
    } catch (error) {
      await this.settleFailure(job, error);
    }
  }

  /**
   * Writes the file's chunks hidden (in short transactions, cancellable between them), then, unless the
   * file changed or its work was cancelled meanwhile, makes them its chunks in place of the old ones. Every
   * write is fenced with the dataset's lease: a former holder's chunks are never published, nor its status written.
   */
  private async writeKeywords(job: FileJob, prepared: PreparedFile, metadata?: KeyedDocument['metadata']): Promise<void> {
    const { runtime, file } = job;
    const { store, files } = this.deps;
    const signal = job.controller.signal;
    const source = chunkSource(file, prepared, metadata);
    const staged = await store.stage(runtime.datasetId, file.path, source, signal, runtime.lease);
    let published = false;
    try {
      const searchable = await runtime.serial.run(async () => {
        signal.throwIfAborted();
        if ((await files.generationOf(file.datasetId, file.path)) !== file.generation) return false;
        published = await store.publish(staged, runtime.lease);
        return published && (await files.searchable(file, prepared.hash, source.count, runtime.lease));
      });
      if (!searchable) return;
      runtime.progress.searchable();
      if (source.count > 0) runtime.lane.add(file);
    } finally {
      if (!published) await store.discard(staged);
    }
  }

  private prepareOptions(runtime: DatasetRuntime, file: ClaimedFile): PrepareOptions {
    return {
      chunkSize: runtime.chunkSize,
      chunkOverlap: runtime.chunkOverlap,
      knownHash: file.contentHash,
      folder: '',
      roots: runtime.roots,
      maxFileBytes: this.deps.config.maxFileBytes,
      maxTextBytes: this.deps.config.maxTextBytes,
    };
  }

  /**
   * A cancelled file is left as its cause says: stopped or closed → queued again for later; removed or
   * changed → its row has moved on already. Anything else is the file's failure, with the reason. Once the
   * dataset's lease is lost nothing is written (a refused write lands here too): the file is its new holder's,
   * which queued it again when it started.
   */
  private async settleFailure(job: FileJob, error: unknown): Promise<void> {
    const { runtime, file } = job;
    if (leaseLost(runtime)) return;
    const reason: unknown = job.controller.signal.reason;
    const cause = reason instanceof Cancelled ? reason.why : undefined;
    if (cause === 'removed' || cause === 'changed') return;
    if (cause === 'stopped' || cause === 'closed' || error instanceof ParserPoolClosedError) {
      await this.deps.files.release(file, runtime.lease);
      return;
    }
    await failFile(this.deps, runtime.serial, file, errorMessage(error), runtime.lease);
  }
}

/** The store's rows for a file, made as they are written: each chunk with the metadata search shows. */
function chunkSource(file: ClaimedFile, prepared: PreparedFile, documentMetadata?: KeyedDocument['metadata']): ChunkSource {
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
          ...chunk.location,
          ...(title ? { title } : {}),
          ...documentMetadata,
        },
      };
    },
  };
}
