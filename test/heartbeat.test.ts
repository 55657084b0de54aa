import { describe, expect, test } from 'bun:test';
import pino from 'pino';
import { backoffDelay, Heartbeat, type HeartbeatTarget } from '../src/publishing/heartbeat.ts';
import type { HubClient, HubHealthReport } from '../src/syfthub/hub-client.ts';
import { HubUnavailableError } from '../src/syfthub/hub-errors.ts';
import { ManualClock } from './fakes/clock.ts';
import { waitFor } from './helpers/wait.ts';

const report: HubHealthReport = {
  endpoints: [{ slug: 'ep', status: 'healthy', checked_at: '2025-01-01T00:00:00.000Z' }],
  ttl_seconds: 90,
  url: 'https://x.example',
};

/** A client whose reports fail while `down` is true, counting the attempts. */
function fakeClient() {
  const state = { down: false, attempts: 0, delivered: 0 };
  const client = {
    reportHealth: async () => {
      state.attempts++;
      if (state.down) throw new HubUnavailableError("Marketplace 'hub' cannot be reached");
      state.delivered++;
    },
  } as unknown as HubClient;
  return { state, client };
}

describe('heartbeat backoff', () => {
  test('the delay doubles from two intervals and is capped', () => {
    expect([1, 2, 3, 4].map((failures) => backoffDelay(failures, 30_000, 600_000))).toEqual([60_000, 120_000, 240_000, 480_000]);
    expect(backoffDelay(5, 30_000, 600_000)).toBe(600_000);
    expect(backoffDelay(1000, 30_000, 600_000)).toBe(600_000);
  });

  test('an unreachable marketplace is skipped until its backoff has passed, and is tried again after', async () => {
    const clock = new ManualClock();
    const { state, client } = fakeClient();
    const target: HeartbeatTarget = { key: 'm1', label: 't/hub', client, report: async () => report };
    const heartbeat = new Heartbeat({ intervalMs: 1000, targets: async () => [target], log: pino({ level: 'silent' }), clock });

    state.down = true;
    await heartbeat.beat();
    expect(state.attempts).toBe(1);
    clock.advance(1000); // one interval later: still backing off (2 intervals after the first failure)
    await heartbeat.beat();
    expect(state.attempts).toBe(1);
    clock.advance(1000);
    await heartbeat.beat();
    expect(state.attempts).toBe(2); // second failure: now 4 intervals
    clock.advance(3000);
    await heartbeat.beat();
    expect(state.attempts).toBe(2);
    clock.advance(1000);
    state.down = false;
    await heartbeat.beat();
    expect(state.delivered).toBe(1);
    clock.advance(1000); // recovered: every interval again
    await heartbeat.beat();
    expect(state.delivered).toBe(2);
  });

  test('one failing marketplace does not hold back the others', async () => {
    const failing = fakeClient();
    const working = fakeClient();
    failing.state.down = true;
    const heartbeat = new Heartbeat({
      intervalMs: 1000,
      targets: async () => [
        { key: 'a', label: 'a', client: failing.client, report: async () => report },
        { key: 'b', label: 'b', client: working.client, report: async () => report },
      ],
      log: pino({ level: 'silent' }),
    });
    await heartbeat.beat();
    await heartbeat.beat();
    expect(failing.state.attempts).toBe(1);
    expect(working.state.delivered).toBe(2);
  });

  test('beats come every interval, one after the other', async () => {
    const clock = new ManualClock();
    const { state, client } = fakeClient();
    const heartbeat = new Heartbeat({
      intervalMs: 30_000,
      targets: async () => [{ key: 'a', label: 'a', client, report: async () => report }],
      log: pino({ level: 'silent' }),
      clock,
    });
    heartbeat.start();
    expect(clock.waiting).toEqual([30_000]);
    clock.advance(29_999);
    expect(clock.waiting).toEqual([1]); // not yet
    clock.advance(1);
    await waitFor('the first beat', async () => state.attempts === 1);
    // The next beat is timed from the end of this one.
    await waitFor('the next beat to be scheduled', async () => clock.waiting.length === 1);
    expect(clock.waiting).toEqual([30_000]);
    clock.advance(30_000);
    await waitFor('the second beat', async () => state.attempts === 2);
    await heartbeat.stop();
    expect(clock.waiting).toEqual([]);
  });

  test('stop waits for a beat in progress and schedules no more', async () => {
    const clock = new ManualClock();
    let release: () => void = () => undefined;
    let began: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (began = resolve));
    const { state, client } = fakeClient();
    const heartbeat = new Heartbeat({
      intervalMs: 1000,
      targets: async () => [
        {
          key: 'a',
          label: 'a',
          client,
          report: () => {
            began();
            return new Promise<HubHealthReport>((resolve) => (release = () => resolve(report)));
          },
        },
      ],
      log: pino({ level: 'silent' }),
      clock,
    });
    heartbeat.start();
    clock.advance(1000);
    await started;
    let stopped = false;
    const stopping = heartbeat.stop().then(() => (stopped = true));
    // One turn of the event loop: all that `stop` can do without the beat is done.
    await Bun.sleep(0);
    expect(stopped).toBe(false); // the beat in progress is waited for
    release();
    await stopping;
    expect(state.delivered).toBe(1);
    expect(clock.waiting).toEqual([]); // no beat follows
    clock.advance(10_000);
    expect(state.attempts).toBe(1);
  });
});
