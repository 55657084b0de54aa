import { FileStaging, type StagingEngine } from './file-staging.ts';
import type { GarbageCollector } from './garbage-collector.ts';
import type { ChunkSource, FencingLease, StagedFile, VectorStore } from './store.ts';

/**
 * What both engines' store facades (sqlite-store.ts, postgres/store.ts) do alike: phase 1 over the engine's
 * transactions (file-staging.ts) and the garbage collector (garbage-collector.ts) it feeds, collected on
 * demand and stopped on close. Each facade extends it and adds the rest of the VectorStore interface.
 */
export abstract class StagingVectorStore<Set> implements Pick<VectorStore, 'stage' | 'publish' | 'discard' | 'retireFile' | 'close'> {
  private readonly staging: FileStaging<Set>;

  protected constructor(
    protected readonly garbage: GarbageCollector,
    engine: StagingEngine<Set>,
  ) {
    this.staging = new FileStaging(engine, garbage);
  }

  async stage(datasetId: string, fileKey: string, source: ChunkSource, signal?: AbortSignal, lease?: FencingLease): Promise<StagedFile> {
    return this.staging.stage(datasetId, fileKey, source, signal, lease);
  }

  async publish(staged: StagedFile, lease?: FencingLease): Promise<boolean> {
    return this.staging.publish(staged, lease);
  }

  async discard(staged: StagedFile): Promise<void> {
    await this.staging.discard(staged);
  }

  async retireFile(datasetId: string, fileKey: string, lease?: FencingLease): Promise<number> {
    return this.staging.retireFile(datasetId, fileKey, lease);
  }

  /**
   * Deletes every hidden chunk now (they are otherwise deleted in the background after the write that hid
   * them): what a test or a bench waits for before it counts rows.
   */
  collectGarbage(): Promise<void> {
    return this.garbage.collect();
  }

  /** Stops collecting garbage (what is left is collected at the next start) and waits for the batch under way. */
  async close(): Promise<void> {
    await this.garbage.close();
  }
}
