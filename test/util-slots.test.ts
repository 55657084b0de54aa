import { describe, expect, test } from 'bun:test';
import { Slots } from '../src/util/slots.ts';

describe('Slots', () => {
  test('hands out as many slots as it has, then the others wait in arrival order', async () => {
    const slots = new Slots(2);
    const order: string[] = [];
    const first = await slots.acquire();
    const second = await slots.acquire();
    const waiters = ['c', 'd'].map(async (name) => {
      const release = await slots.acquire();
      order.push(name);
      return release;
    });
    expect(slots.queued).toBe(2);
    second();
    const third = await waiters[0];
    first();
    const fourth = await waiters[1];
    expect(order).toEqual(['c', 'd']);
    expect(slots.queued).toBe(0);
    third?.();
    fourth?.();
  });

  test('a released slot goes to the first waiter, not to a newcomer', async () => {
    const slots = new Slots(1);
    const release = await slots.acquire();
    const waiter = slots.acquire();
    release();
    const newcomer = slots.acquire();
    const granted = await waiter;
    expect(slots.queued).toBe(1);
    granted();
    (await newcomer)();
  });

  test('releasing twice gives the slot back once', async () => {
    const slots = new Slots(1);
    const release = await slots.acquire();
    release();
    release();
    const again = await slots.acquire();
    const waiter = slots.acquire();
    expect(slots.queued).toBe(1);
    again();
    (await waiter)();
  });

  test('a waiter whose signal aborts leaves the line with its reason; the ones behind move up', async () => {
    const slots = new Slots(1);
    const release = await slots.acquire();
    const controller = new AbortController();
    const leaving = slots.acquire(controller.signal);
    const staying = slots.acquire();
    controller.abort(new Error('caller left'));
    await expect(leaving).rejects.toThrow('caller left');
    expect(slots.queued).toBe(1);
    release();
    (await staying)();
  });

  test('an already aborted signal is refused at once', () => {
    const slots = new Slots(1);
    const controller = new AbortController();
    controller.abort(new Error('too late'));
    expect(() => slots.acquire(controller.signal)).toThrow('too late');
  });
});
