import { collectGarbage } from './chunk-sets.ts';
import type { StoreConnection } from './sqlite-connection.ts';

/** Chunks deleted per transaction when garbage (a replaced or deleted file's chunks) is collected: about 20 ms. */
const COLLECT_ROWS = 512;

/**
 * Deletes hidden chunks (garbage sets, chunk-sets.ts) of every dataset in batches of COLLECT_ROWS, one short
 * transaction each. One collection runs at a time; calls made meanwhile share the next one, which sees their
 * garbage too. Stopped, it leaves what is left for the next start (a dataset's start asks for a collection).
 */
export class GarbageCollector {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly connection: StoreConnection) {}

  /** Collects until no garbage is left (or the store is closed). */
  collect(): Promise<void> {
    if (this.queued) return this.queued;
    const collection: Promise<void> = (this.running ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        this.queued = undefined;
        this.running = collection;
        while (!this.closed && (await this.connection.write((sqlite) => collectGarbage(sqlite, COLLECT_ROWS))));
      })
      .finally(() => {
        if (this.running === collection) this.running = undefined;
      });
    this.queued = collection;
    return collection;
  }

  /** A collection nobody waits for: a failed one leaves the garbage to the next. */
  inBackground(): void {
    void this.collect().catch(() => undefined);
  }

  /** Stops collecting and waits for the batch under way. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.running, this.queued]);
  }
}
