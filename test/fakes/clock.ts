import type { Clock } from '../../src/util/clock.ts';

/** 10:00:30 UTC: half a minute away from either edge of its minute, so no fixed window turns over unasked. */
export const CLOCK_START = Date.UTC(2026, 0, 1, 10, 0, 30);

/**
 * Half a minute into the real time's minute (in an hour's last minute, the minute before: the hour's edge is
 * then 90 s away): where a whole app's clock starts. What other parties stamp follows the real time (a hub's
 * token expiry, the payer's check that a challenge has not expired, a range a test asks for in January), so
 * the app's clock must stand near it; and still no fixed window turns over unasked.
 */
export function nearRealTime(): number {
  const minute = Math.floor(Date.now() / 60_000) * 60_000;
  const lastOfHour = new Date(minute).getUTCMinutes() === 59;
  return (lastOfHour ? minute - 60_000 : minute) + 30_000;
}

interface Timer {
  at: number;
  callback: () => void;
}

/**
 * A clock that stands still until a test moves it: windows, heartbeats and backoffs then behave the same
 * on every run, and a test that needs half a minute to pass advances it instead of waiting.
 */
export class ManualClock implements Clock {
  private current: number;
  private readonly timers: Timer[] = [];

  constructor(start = CLOCK_START) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  after(ms: number, callback: () => void): () => void {
    const timer: Timer = { at: this.current + Math.max(0, ms), callback };
    this.timers.push(timer);
    return () => {
      const index = this.timers.indexOf(timer);
      if (index >= 0) this.timers.splice(index, 1);
    };
  }

  /**
   * Moves the time on by `ms`, calling every timer that falls due on the way, each at its own time, in
   * order. What a callback starts asynchronously runs afterwards, at the new time: wait for its effect.
   */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const next = this.timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.timers.splice(this.timers.indexOf(next), 1);
      this.current = next.at;
      next.callback();
    }
    this.current = target;
  }

  /** How far from now each waiting timer falls due, soonest first. */
  get waiting(): number[] {
    return this.timers.map((timer) => timer.at - this.current).sort((a, b) => a - b);
  }
}
