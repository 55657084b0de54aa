/**
 * Runs tasks one at a time, in the order they were queued. Embedders queue one batch per task (not one
 * call), so a one-text query waits behind at most one batch of a long ingestion instead of all of it;
 * the ingestion engine queues each dataset's index changes.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
