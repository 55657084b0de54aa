import { FairQueue } from './fair-queue.ts';

interface Waiter {
  grant(): void;
}

/**
 * A few permits handed out in turns across keys (dataset ids): the parse thread takes one file of each
 * dataset in turn instead of every queued file of whichever dataset claimed first. A key that
 * `eligible` refuses (its parsed text is still waiting for the embedder) waits without holding up the
 * others; call `recheck` when that may have changed.
 */
export class TurnGate {
  private readonly waiting = new FairQueue<Waiter>();
  private free: number;

  constructor(
    permits: number,
    private readonly eligible: (key: string) => boolean = () => true,
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
    while (this.free > 0) {
      const waiter = this.waiting.shift(this.eligible);
      if (!waiter) return;
      this.free--;
      waiter.grant();
    }
  }
}
