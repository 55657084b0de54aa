/**
 * The time, wherever knode reads it: the timestamps it stores (`isoNow`), fixed windows (rate limits, failed
 * attempts), expiries (challenges, tokens, single-use keys), heartbeats and their backoff, the tunnel's
 * reconnection backoff, the pause after a failed hub login. Production uses `systemClock`, given once by the
 * composition root (services.ts); tests pass a clock they move by hand (test/fakes/clock.ts) instead of
 * waiting. No other file of src/ calls `Date.now()` or `new Date()` (test/clock-reads.test.ts).
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

/**
 * The clock's time as knode stores it: ISO 8601 UTC with a trailing Z. A function beside the interface
 * rather than a method of it, so that every clock (the test's, keyword-first's monotonic one) has it unasked.
 */
export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
