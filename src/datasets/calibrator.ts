import type { Logger } from 'pino';
import type { Embedder } from '../embeddings/embedder.ts';
import { type Clock, isoNow } from '../util/clock.ts';
import { calibrationFor } from '../vectors/calibration.ts';
import { type FittedCalibration, fitDatasetCalibration, fitIsCurrent, MIN_FILES } from '../vectors/self-calibration.ts';
import type { VectorStore } from '../vectors/store.ts';
import type { DatasetRecord } from './codec.ts';
import type { DatasetRepository } from './repository.ts';

/**
 * Fits each dataset's own calibration (vectors/self-calibration.ts) once its files are indexed, and again
 * when it has grown or shrunk by a quarter since, or its embedder changed. One fit at a time, in the
 * background: a fit of 300 pseudo-questions is about 1,200 searches and one batch of query vectors.
 */
export class DatasetCalibrator {
  private timer: ReturnType<typeof setInterval> | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: {
      readonly datasets: DatasetRepository;
      readonly store: VectorStore;
      /** The dataset's own embedder (the one its search uses). */
      readonly embedderOf: (record: DatasetRecord) => Promise<Embedder>;
      readonly log: Pick<Logger, 'info' | 'warn'>;
      /** How often datasets are looked at; 0: never by itself (tests call `check`). */
      readonly intervalMs: number;
      /** When a fit is said to be made. */
      readonly clock: Clock;
    },
  ) {}

  /** Also after stop() (cluster mode: the calibrator's lease came back to this replica). */
  start(): void {
    this.stopped = false;
    if (this.deps.intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.check().catch(() => undefined), this.deps.intervalMs);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** Fits every active dataset that needs it (see `due`); a check already under way is awaited instead. */
  check(): Promise<void> {
    this.running ??= this.checkNow().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Fits the dataset of this id now, whatever its state (the evaluation does, scripts/eval/harness.ts). */
  async refit(datasetId: string): Promise<FittedCalibration | undefined> {
    const record = await this.deps.datasets.getAnyTenant(datasetId);
    return record && this.calibrate(record);
  }

  /** Fits one dataset now, whatever its state: undefined when it is too small (the shipped constants stay). */
  async calibrate(record: DatasetRecord): Promise<FittedCalibration | undefined> {
    const embedderSpec = record.configuration.embedder;
    const fitted = await fitDatasetCalibration({
      datasetId: record.id,
      embedder: embedderSpec,
      shipped: calibrationFor(embedderSpec),
      source: this.deps.store,
      embed: async (texts) => (await this.deps.embedderOf(record)).embed(texts),
      now: isoNow(this.deps.clock),
    });
    if (fitted) {
      await this.deps.store.saveCalibration(record.id, fitted);
      this.deps.log.info(
        { dataset: record.id, questions: fitted.questions, unanswerable: fitted.unanswerable, chunks: fitted.chunkCount },
        'dataset calibration fitted',
      );
    }
    return fitted;
  }

  private async checkNow(): Promise<void> {
    const active = (await this.deps.datasets.listActive()).filter((record) => record.status === 'running');
    if (active.length === 0) return;
    const counts = await this.deps.datasets.ingestionCounts(active.map((record) => record.id));
    const fits = await this.deps.store.fittedCalibrations(active.map((record) => record.id));
    for (const record of active) {
      if (this.stopped) return;
      const count = counts.get(record.id);
      if (!count || !due(record, count, fits.get(record.id))) continue;
      try {
        await this.calibrate(record);
      } catch (error) {
        this.deps.log.warn({ dataset: record.id, err: error }, 'dataset calibration failed; the shipped constants stay');
      }
    }
  }
}

/**
 * A dataset is fitted when all its files are indexed, it has enough of them, and it has no fit for what it
 * is now: none yet, one for another embedder or of other shipped constants, or one of a quarter fewer or more chunks.
 */
export function due(
  record: DatasetRecord,
  count: { files_pending: number; files_indexed: number; chunks: number },
  fitted: FittedCalibration | undefined,
): boolean {
  if (count.files_pending > 0 || count.files_indexed < MIN_FILES) return false;
  if (!fitted || !fitIsCurrent(fitted, record.configuration.embedder, calibrationFor(record.configuration.embedder))) return true;
  return count.chunks >= fitted.chunkCount * 1.25 || count.chunks <= fitted.chunkCount * 0.75;
}
