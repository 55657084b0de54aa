import { FairQueue } from './fair-queue.ts';

interface Waiter {
  grant(): void;
}

/**
 * A few permits handed out in turns across keys (dataset ids): the parse threads take one file of each
 * dataset in turn instead of every queued file of whichever dataset claimed first. A key that
 * `eligible` refuses (its parsed text is still waiting for the embedder) waits without holding up the
 * others; call `recheck` when that may have changed. No key holds more than `perKey` permits, so that
 * one dataset's files cannot take every permit while another dataset's file waits for one.
 */
export class TurnGate {
  private readonly waiting = new FairQueue<Waiter>();
  private readonly held = new Map<string, number>();
  private free: number;

  constructor(
    permits: number,
    private readonly eligible: (key: string) => boolean = () => true,
    private readonly perKey = Number.POSITIVE_INFINITY,
  ) {
    this.free = permits;
  }

  /** Resolves with the function that gives the permit back (calling it twice is harmless). */
  acquire(key: string, signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (this.waiting.delete(key, waiter)) reject(signal.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          let held = true;
          resolve(() => {
            if (!held) return;
            held = false;
            this.free++;
            const count = (this.held.get(key) ?? 1) - 1;
            if (count > 0) this.held.set(key, count);
            else this.held.delete(key);
            this.dispatch();
          });
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(key, waiter);
      this.dispatch();
    });
  }

  recheck(): void {
    this.dispatch();
  }

  private dispatch(): void {
    const eligible = (key: string) => (this.held.get(key) ?? 0) < this.perKey && this.eligible(key);
    while (this.free > 0) {
      let granted: string | undefined;
      const waiter = this.waiting.serve((items, key) => {
        granted = key;
        return items.shift();
      }, eligible);
      if (!waiter || granted === undefined) return;
      this.free--;
      this.held.set(granted, (this.held.get(granted) ?? 0) + 1);
      waiter.grant();
    }
  }
}
