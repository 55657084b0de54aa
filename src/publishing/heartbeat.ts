import type { Logger } from 'pino';
import { errorMessage } from '../domain/errors.ts';
import type { HubClient, HubHealthReport } from '../syfthub/hub-client.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';

/** One marketplace to report to, and how to build its report when the time comes. */
export interface HeartbeatTarget {
  /** Identifies the marketplace across beats (its backoff is kept under this key). */
  key: string;
  /** Names the tenant and marketplace in log lines. */
  label: string;
  client: HubClient;
  report(): Promise<HubHealthReport>;
}

export interface HeartbeatOptions {
  /** 30 s (API-CONTRACT 9). */
  intervalMs: number;
  targets(): Promise<HeartbeatTarget[]>;
  log: Logger;
  /** A failing marketplace is retried after 2, 4, 8... intervals, never more than this apart. */
  maxBackoffMs?: number;
  /** The real time unless a test moves it by hand. */
  clock?: Clock;
  /** Told of every report a marketplace did not take (metrics count them), with the target's label. */
  onFailure?: (label: string) => void;
}

/** How the last report to a marketplace went. */
export interface HeartbeatResult {
  readonly at: string;
  readonly ok: boolean;
  readonly error: string | null;
}

export const HEARTBEAT_INTERVAL_MS = 30_000;
/** The hub forgets an endpoint's health after this long without a heartbeat: three missed beats. */
export const HEARTBEAT_TTL_SECONDS = 90;
const DEFAULT_MAX_BACKOFF_MS = 10 * 60_000;

/** How long to wait before trying a marketplace again after `failures` failures in a row. */
export function backoffDelay(failures: number, intervalMs: number, maxMs: number): number {
  return Math.min(intervalMs * 2 ** Math.min(failures, 20), maxMs);
}

/**
 * Tells each marketplace, every interval, which published endpoints are healthy. Beats never overlap
 * (the next is scheduled when one ends); a marketplace that fails is left alone for a growing while,
 * so an unreachable hub is not hammered; `stop` waits for a beat in progress and schedules no more.
 */
export class Heartbeat {
  private cancelTimer: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly failing = new Map<string, { failures: number; retryAt: number }>();
  private readonly results = new Map<string, HeartbeatResult>();
  private readonly clock: Clock;

  constructor(private readonly options: HeartbeatOptions) {
    this.clock = options.clock ?? systemClock;
  }

  start(): void {
    if (this.stopped || this.cancelTimer) return;
    this.schedule();
  }

  /** Starts again after stop() (cluster mode: the heartbeats' lease came back to this replica). */
  resume(): void {
    this.stopped = false;
    this.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    await this.running;
  }

  /** The last report to the target of this key, if one was sent since knode started. */
  lastResult(key: string): HeartbeatResult | undefined {
    return this.results.get(key);
  }

  /** One round of reports; public so that tests can drive beats without waiting for the timer. */
  async beat(): Promise<void> {
    let targets: HeartbeatTarget[];
    try {
      targets = await this.options.targets();
    } catch (error) {
      this.options.log.warn({ err: error }, 'heartbeat: could not list what to report');
      return;
    }
    await Promise.all(targets.map((target) => this.report(target)));
  }

  private async report(target: HeartbeatTarget): Promise<void> {
    const state = this.failing.get(target.key);
    if (state && state.retryAt > this.clock.now()) return;
    try {
      await target.client.reportHealth(await target.report());
      this.results.set(target.key, { at: isoNow(this.clock), ok: true, error: null });
      if (state) this.options.log.info({ target: target.label }, 'heartbeat: the marketplace takes reports again');
      this.failing.delete(target.key);
    } catch (error) {
      if (this.stopped) return;
      this.results.set(target.key, { at: isoNow(this.clock), ok: false, error: errorMessage(error) });
      this.options.onFailure?.(target.label);
      const failures = (state?.failures ?? 0) + 1;
      const delay = backoffDelay(failures, this.options.intervalMs, this.options.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS);
      this.failing.set(target.key, { failures, retryAt: this.clock.now() + delay });
      this.options.log.warn(
        { target: target.label, failures, retryInMs: delay, err: errorMessage(error) },
        'heartbeat: the marketplace did not take the report',
      );
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    // A pending heartbeat never keeps the process alive on its own (the clock's timers do not).
    this.cancelTimer = this.clock.after(this.options.intervalMs, () => {
      this.running = this.beat().finally(() => {
        this.running = undefined;
        this.schedule();
      });
    });
  }
}
