/**
 * Finding 3 (starvation) at the level of the schedulers: one dataset's 20,000 chunks must not keep
 * another dataset's first chunk waiting, and a cancelled file must stop costing embedding time.
 */
import { describe, expect, test } from 'bun:test';
import type { Embedder } from '../../src/embeddings/embedder.ts';
import { EmbeddingScheduler } from '../../src/ingestion/embedding-scheduler.ts';
import { FairQueue } from '../../src/ingestion/fair-queue.ts';
import { TurnGate } from '../../src/ingestion/turn-gate.ts';
import { WHOLE_TEXT_WINDOW } from '../helpers/constants.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * An embedder that records every call and takes `ms` per call, stopping early when its signal aborts;
 * `finish()` ends the calls in flight at once.
 */
function slowEmbedder(ms: number) {
  const calls: { texts: string[]; aborted: boolean }[] = [];
  const inFlight = new Set<() => void>();
  const embedder: Embedder = {
    id: 'test',
    dimension: 2,
    window: WHOLE_TEXT_WINDOW,
    embed: async (texts, signal) => {
      const call = { texts, aborted: false };
      calls.push(call);
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          inFlight.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        inFlight.add(done);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          inFlight.delete(done);
          call.aborted = true;
          reject(signal.reason);
        });
      });
      return texts.map(() => new Float32Array([1, 0]));
    },
  };
  const finish = () => {
    for (const done of [...inFlight]) done();
  };
  return { embedder, calls, finish };
}

const texts = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('taking turns', () => {
  test("a dataset with 20,000 texts waiting delays another dataset's text by a slice or two, not by all of them", async () => {
    const { embedder, calls } = slowEmbedder(5);
    const scheduler = new EmbeddingScheduler({ concurrency: 2, slice: { texts: 64, characters: 16_000 } });
    const controller = new AbortController();
    const huge = scheduler.embed('a', embedder, texts('a', 20_000), controller.signal);
    await waitFor("a few of A's slices to be done", async () => calls.length >= 4);
    const queuedAt = calls.length;
    const small = await scheduler.embed('b', embedder, ['b-0'], new AbortController().signal);
    expect(small).toHaveLength(1);
    // A's slices in flight when B arrived finish; B's slice is the next one to start.
    const servedAt = calls.findIndex((call) => call.texts.includes('b-0'));
    expect(servedAt - queuedAt).toBeLessThanOrEqual(1);
    expect(servedAt).toBeLessThan(20_000 / 64);
    controller.abort(new Error('cancelled'));
    await expect(huge).rejects.toThrow('cancelled');
  });

  test('a slice batches the texts of several small files of one dataset', async () => {
    const { embedder, calls } = slowEmbedder(1);
    const scheduler = new EmbeddingScheduler({ concurrency: 1, slice: { texts: 64, characters: 16_000 } });
    const signal = new AbortController().signal;
    const blocker = scheduler.embed('x', embedder, ['first'], signal);
    const files = Array.from({ length: 20 }, (_, i) => scheduler.embed('a', embedder, [`file ${i}`], signal));
    await Promise.all([blocker, ...files]);
    expect(calls.map((call) => call.texts.length)).toEqual([1, 20]);
  });

  test("a cancelled file's waiting texts are dropped and its slice in flight is abandoned at once", async () => {
    const { embedder, calls } = slowEmbedder(10_000);
    const scheduler = new EmbeddingScheduler({ concurrency: 2, slice: { texts: 64, characters: 16_000 } });
    const controller = new AbortController();
    const huge = scheduler.embed('a', embedder, texts('a', 20_000), controller.signal);
    await waitFor('both slices in flight', async () => calls.length === 2);
    expect(scheduler.waitingCharacters('a')).toBeGreaterThan(0);
    const started = performance.now();
    controller.abort(new Error('file deleted'));
    await expect(huge).rejects.toThrow('file deleted');
    expect(performance.now() - started).toBeLessThan(100);
    expect(calls.every((call) => call.aborted)).toBe(true);
    expect(scheduler.waitingCharacters('a')).toBe(0);
  });

  test('a slice shared with another file goes on when only one of them is cancelled', async () => {
    // Calls last until the test ends them: the slice is in flight for as long as the test needs.
    const { embedder, calls, finish } = slowEmbedder(60_000);
    const scheduler = new EmbeddingScheduler({ concurrency: 1, slice: { texts: 64, characters: 16_000 } });
    const blocker = scheduler.embed('x', embedder, ['first'], new AbortController().signal);
    const cancelled = new AbortController();
    const one = scheduler.embed('a', embedder, ['one'], cancelled.signal);
    const two = scheduler.embed('a', embedder, ['two'], new AbortController().signal);
    await waitFor('the first slice to be in flight', async () => calls.length === 1);
    finish();
    await blocker;
    await waitFor("the slice of 'one' and 'two' to be in flight", async () => calls.length === 2);
    expect(calls.at(-1)?.texts).toEqual(['one', 'two']);
    cancelled.abort(new Error('gone'));
    await expect(one).rejects.toThrow('gone');
    finish();
    expect(await two).toHaveLength(1);
    expect(calls.at(-1)).toEqual({ texts: ['one', 'two'], aborted: false });
  });

  test('the parse gate serves datasets in turns and holds back one whose text is backed up', async () => {
    const order: string[] = [];
    const backedUp = new Set(['c']);
    const gate = new TurnGate(1, (key) => !backedUp.has(key));
    const signal = new AbortController().signal;
    const hold = await gate.acquire('a', signal);
    // Each holder gives its permit back at once: the order of grants is the order of turns.
    const grants = ['a', 'a', 'b', 'c'].map((key) =>
      gate.acquire(key, signal).then((release) => {
        order.push(key);
        release();
      }),
    );
    hold();
    await waitFor('the datasets that are not backed up to be served', async () => order.length >= 3);
    expect(order).toEqual(['a', 'b', 'a']);
    backedUp.delete('c');
    gate.recheck();
    await Promise.all(grants);
    expect(order).toEqual(['a', 'b', 'a', 'c']);
  });

  test('the parse gate keeps a permit for another dataset while one dataset holds its share', async () => {
    const gate = new TurnGate(3, undefined, 2);
    const signal = new AbortController().signal;
    const a = [await gate.acquire('a', signal), await gate.acquire('a', signal)];
    let thirdOfA = false;
    const third = gate.acquire('a', signal).then((release) => {
      thirdOfA = true;
      return release;
    });
    // B is served at once, though A asked first: A holds its two permits.
    const b = await gate.acquire('b', signal);
    expect(thirdOfA).toBe(false);
    a[0]?.();
    (await third)();
    a[1]?.();
    b();
  });

  test('the fair queue takes one item of each key in turn', () => {
    const queue = new FairQueue<string>();
    for (const item of ['a1', 'a2', 'a3']) queue.push('a', item);
    queue.push('b', 'b1');
    queue.push('c', 'c1');
    const served: string[] = [];
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) served.push(item);
    expect(served).toEqual(['a1', 'b1', 'c1', 'a2', 'a3']);
    expect(queue.size).toBe(0);
  });
});
