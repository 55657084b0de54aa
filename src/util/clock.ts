/**
 * The time, where behaviour waits on it: fixed windows (rate limits, failed attempts), heartbeats and
 * their backoff, the tunnel's reconnection backoff, the pause after a failed hub login. Production uses
 * `systemClock`; tests pass a clock they move by hand (test/fakes/clock.ts) instead of waiting.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once, `ms` from now, without keeping the process alive; the answer cancels it. */
  after(ms: number, callback: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after: (ms, callback) => {
    const timer = setTimeout(callback, ms);
    timer.unref?.();
    return () => clearTimeout(timer);
  },
};
