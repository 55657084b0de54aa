/**
 * The garbage collector's loop, the same on both engines: it deletes hidden chunks (garbage sets,
 * chunk-sets.ts) of every dataset by calling the engine's `deleteBatch` (one short transaction each: SQLite's
 * in sqlite-garbage.ts, PostgreSQL's in postgres/garbage.ts) until it answers false, no garbage left. One
 * collection runs at a time; calls made meanwhile share the next one, which sees their garbage too. Stopped,
 * it leaves what is left for the next start (a dataset's start asks for a collection).
 */
export class GarbageCollector {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private closed = false;

  /** `deleteBatch` deletes one batch of garbage in a transaction of its own: false when there was none left. */
  constructor(private readonly deleteBatch: () => Promise<boolean>) {}

  /** Collects until no garbage is left (or the store is closed). */
  collect(): Promise<void> {
    if (this.queued) return this.queued;
    const collection: Promise<void> = (this.running ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        this.queued = undefined;
        this.running = collection;
        while (!this.closed && (await this.deleteBatch()));
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
