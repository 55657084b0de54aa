import { abortReason } from './abort.ts';

/**
 * A FIFO counting semaphore whose waiters can give up. Local generations take one slot each: every
 * generation already uses all the cores, so running two at once would only make both slower, and a
 * request whose caller left must not hold its place in the line.
 */
export class Slots {
  private free: number;
  private readonly waiting: { grant: () => void; signal?: AbortSignal; onAbort: () => void }[] = [];

  constructor(count: number) {
    this.free = count;
  }

  /** Callers waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Resolves with the function that gives the slot back (calling it twice gives it back once), in the
   * order callers asked. When `signal` aborts first, the caller leaves the line and this rejects with its
   * reason.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next waiter: a newcomer cannot overtake the line in between.
      const next = this.waiting.shift();
      if (next) {
        next.signal?.removeEventListener('abort', next.onAbort);
        next.grant();
      } else {
        this.free++;
      }
    };
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(release);
    }
    return new Promise((resolvePromise, reject) => {
      const waiter = {
        grant: () => resolvePromise(release),
        signal,
        onAbort: () => {
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(abortReason(signal as AbortSignal));
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }
}
