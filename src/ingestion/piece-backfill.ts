import type { Logger } from 'pino';
import type { Embedder } from '../embeddings/embedder.ts';
import { cutPieces } from '../embeddings/pieces.ts';
import { packPieces } from '../vectors/piece-similarity.ts';
import type { LaterPieces, VectorStore } from '../vectors/store.ts';
import type { WindowLimits } from './embedding-lane.ts';

/**
 * Whole-chunk vectors for a dataset indexed before them (its index in vector layout 1,
 * ../vectors/piece-similarity.ts), made in the background while it runs, so that an upgrade needs no reindex:
 * its chunks with a vector and no later pieces are read back a window at a time, in row order; those longer than
 * the embedder's window get the vectors of their later pieces (their opening's vector stays as it is), which are
 * stored; once none is left the index moves to the current layout, and (if some chunk got pieces) the dataset's
 * own calibration, fitted on the openings' cosines, is dropped to be fitted again (datasets/calibrator.ts). Chunks
 * embedded meanwhile by the lane come with their pieces already.
 *
 * It embeds through the lanes' scheduler (slices in turns across datasets, held back by keyword first). A stop
 * abandons the window in flight; the next start begins again from the first chunk still without pieces (those
 * that fit in one piece are read and cut again, not embedded). An embedder that fails ends it until the next start.
 */

export interface PieceBackfillDeps {
  readonly datasetId: string;
  readonly store: VectorStore;
  readonly embedder: Embedder;
  /** How much text is read back and embedded at once (the lanes' window). */
  readonly window: WindowLimits;
  /** Embeds through the scheduler, as the dataset's lane does. */
  embed(texts: string[], signal: AbortSignal): Promise<Float32Array[]>;
  readonly log: Logger;
}

export class PieceBackfill {
  private readonly controller = new AbortController();
  private readonly running: Promise<void>;

  constructor(private readonly deps: PieceBackfillDeps) {
    this.running = this.run().catch((error: unknown) => {
      if (this.controller.signal.aborted) return;
      deps.log.warn(
        { dataset: deps.datasetId, err: error },
        'whole-chunk vectors for the chunks indexed before them stopped; they are tried again at the next start',
      );
    });
  }

  /** Resolves once every chunk has its pieces (or the work stopped). */
  get done(): Promise<void> {
    return this.running;
  }

  /** Abandons the window in flight; the next start goes on from the first chunk still without pieces. */
  async stop(): Promise<void> {
    this.controller.abort(new Error('the dataset stopped'));
    await this.running;
  }

  private async run(): Promise<void> {
    const { store, datasetId, embedder, window, log } = this.deps;
    const signal = this.controller.signal;
    if (await store.piecesComplete(datasetId)) return;
    log.info({ dataset: datasetId }, 'embedding the later pieces of the chunks indexed before whole-chunk vectors');
    let after = 0;
    let pieced = 0;
    for (;;) {
      signal.throwIfAborted();
      const rows = await store.chunksWithoutPieces(datasetId, after, window);
      const last = rows.at(-1);
      if (!last) break;
      const cut = rows
        .map((row) => ({ rowid: row.rowid, later: cutPieces(row.content, embedder.window).slice(1) }))
        .filter((row) => row.later.length > 0);
      if (cut.length > 0) {
        const vectors = await this.deps.embed(
          cut.flatMap((row) => row.later),
          signal,
        );
        const chunks: LaterPieces[] = [];
        let offset = 0;
        for (const { rowid, later } of cut) {
          chunks.push({ rowid, pieces: packPieces(vectors.slice(offset, offset + later.length), embedder.dimension) });
          offset += later.length;
        }
        signal.throwIfAborted();
        await store.addLaterPieces(datasetId, chunks);
        pieced += chunks.length;
      }
      after = last.rowid;
    }
    await store.finishPieces(datasetId, pieced > 0);
    log.info({ dataset: datasetId, chunks: pieced }, 'every chunk indexed before whole-chunk vectors has its later pieces');
  }
}
