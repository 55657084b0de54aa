/**
 * Items pushed by callbacks, pulled by a `for await`: turns a callback API (node-llama-cpp's
 * onResponseChunk) into an async iterable. Items pushed before a failure are still delivered first.
 */
export class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;

  push(item: T): void {
    this.items.push(item);
    this.notify();
  }

  /** The iteration ends once the items already pushed are taken. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  /** The iteration throws `error` once the items already pushed are taken. */
  fail(error: unknown): void {
    this.failure = { error };
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (true) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
      } else if (this.failure) {
        throw this.failure.error;
      } else if (this.ended) {
        return;
      } else {
        await new Promise<void>((wake) => (this.wake = wake));
      }
    }
  }
}
