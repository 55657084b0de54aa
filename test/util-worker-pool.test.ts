import { describe, expect, test } from 'bun:test';
import { WorkerPool, type WorkerPoolOptions } from '../src/util/worker-pool.ts';
import type { PoolRequest, PoolResponse } from './fixtures/pool-worker.ts';

const WORKER = new URL('./fixtures/pool-worker.ts', import.meta.url);

function pool(options: Partial<WorkerPoolOptions<PoolResponse, string>> = {}): WorkerPool<PoolRequest, PoolResponse, string> {
  return new WorkerPool<PoolRequest, PoolResponse, string>({
    size: 1,
    url: WORKER,
    result: (response) => {
      if ('text' in response) return response.text;
      throw new Error(response.error);
    },
    crashed: (event) => new Error(`crashed: ${event.message}`),
    exited: () => new Error('exited'),
    abort: 'interrupt',
    ...options,
  });
}

/** Settles within `ms`, or answers 'pending'. */
function settledWithin<T>(promise: Promise<T>, ms: number): Promise<PromiseSettledResult<T> | 'pending'> {
  const settled = Promise.allSettled([promise]).then(([result]) => result as PromiseSettledResult<T>);
  return Promise.race([settled, Bun.sleep(ms).then(() => 'pending' as const)]);
}

describe('WorkerPool', () => {
  test('tasks are answered in arrival order, one at a time per worker; pending counts waiting and running tasks', async () => {
    const workers = pool();
    try {
      const order: string[] = [];
      const tasks = ['a', 'b', 'c'].map((text) => workers.run({ text, wait: 20 }).then((answer) => order.push(answer)));
      expect(workers.pending).toBe(3);
      await Promise.all(tasks);
      expect(order).toEqual(['A', 'B', 'C']);
      expect(workers.pending).toBe(0);
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('with two workers a short task does not wait behind a long one', async () => {
    const workers = pool({ size: 2 });
    try {
      const order: string[] = [];
      const long = workers.run({ text: 'long', wait: 500 }).then((answer) => order.push(answer));
      const short = workers.run({ text: 'short', wait: 20 }).then((answer) => order.push(answer));
      await Promise.all([long, short]);
      // On one worker the short task would have waited for the long one.
      expect(order).toEqual(['SHORT', 'LONG']);
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('a failure the worker reports rejects its task through `result`, and the worker goes on', async () => {
    const workers = pool();
    try {
      const results = await Promise.allSettled([workers.run({ text: 'fail me' }), workers.run({ text: 'next' })]);
      expect(results[0]).toEqual({ status: 'rejected', reason: new Error('cannot do fail me') });
      expect(results[1]).toEqual({ status: 'fulfilled', value: 'NEXT' });
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('a worker that throws or exits is replaced; only its task fails', async () => {
    const workers = pool();
    try {
      const [thrown, afterThrow] = await Promise.allSettled([workers.run({ text: 'throw' }), workers.run({ text: 'one' })]);
      expect(thrown?.status === 'rejected' && String(thrown.reason)).toContain('crashed: ');
      expect(thrown?.status === 'rejected' && String(thrown.reason)).toContain('simulated worker bug');
      expect(afterThrow).toEqual({ status: 'fulfilled', value: 'ONE' });
      const [exited, afterExit] = await Promise.allSettled([workers.run({ text: 'exit' }), workers.run({ text: 'two' })]);
      expect(exited).toEqual({ status: 'rejected', reason: new Error('exited') });
      expect(afterExit).toEqual({ status: 'fulfilled', value: 'TWO' });
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('a task past the timeout fails with the timeout error and loses its worker; the queue behind it runs', async () => {
    const workers = pool({ timeout: { ms: 300, error: () => new Error('too slow') } });
    try {
      const [hung, after] = await Promise.allSettled([workers.run({ text: 'hang' }), workers.run({ text: 'after' })]);
      expect(hung).toEqual({ status: 'rejected', reason: new Error('too slow') });
      expect(after).toEqual({ status: 'fulfilled', value: 'AFTER' });
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test("an answer with another task's id is ignored", async () => {
    const workers = pool();
    try {
      expect(await workers.run({ text: 'stale' })).toBe('STALE');
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('interrupt: an abort rejects at once, a waiting task leaves the queue and a running one loses its worker', async () => {
    const workers = pool({ abort: 'interrupt' });
    try {
      const controller = new AbortController();
      const running = workers.run({ text: 'hang' }, controller.signal);
      const waiting = workers.run({ text: 'waiting' }, controller.signal);
      const other = workers.run({ text: 'other' });
      await Bun.sleep(100);
      controller.abort(new Error('gave up'));
      expect(await settledWithin(running, 10)).toEqual({ status: 'rejected', reason: new Error('gave up') });
      expect(await settledWithin(waiting, 10)).toEqual({ status: 'rejected', reason: new Error('gave up') });
      expect(await other).toBe('OTHER');
      await expect(workers.run({ text: 'late' }, controller.signal)).rejects.toThrow('gave up');
      expect(workers.pending).toBe(0);
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('before-start: a running task finishes; a task whose caller gave up is not started, and the one behind it runs', async () => {
    const workers = pool({ abort: 'before-start' });
    try {
      const controller = new AbortController();
      const running = workers.run({ text: 'running', wait: 200 }, controller.signal);
      const waiting = workers.run({ text: 'waiting' }, controller.signal);
      const behind = workers.run({ text: 'behind' });
      await Bun.sleep(50);
      controller.abort(new Error('gave up'));
      expect(await settledWithin(waiting, 10)).toBe('pending');
      expect(await running).toBe('RUNNING');
      await expect(waiting).rejects.toThrow('gave up');
      expect(await behind).toBe('BEHIND');
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('stop() rejects waiting and running tasks with its error; the pool starts new workers afterwards', async () => {
    const workers = pool();
    const running = workers.run({ text: 'hang' });
    const waiting = workers.run({ text: 'waiting' });
    await Bun.sleep(50);
    workers.stop(new Error('closed'));
    await expect(running).rejects.toThrow('closed');
    await expect(waiting).rejects.toThrow('closed');
    try {
      expect(await workers.run({ text: 'again' })).toBe('AGAIN');
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('stopWhenIdle() lets every waiting and running task finish first', async () => {
    const workers = pool();
    const tasks = [workers.run({ text: 'first', wait: 100 }), workers.run({ text: 'second', wait: 100 })];
    await workers.stopWhenIdle();
    expect(workers.pending).toBe(0);
    expect(await Promise.all(tasks)).toEqual(['FIRST', 'SECOND']);
    try {
      expect(await workers.run({ text: 'again' })).toBe('AGAIN');
    } finally {
      await workers.stopWhenIdle();
    }
  });

  test('a busy worker keeps the process alive, an idle one does not', async () => {
    const script = `
      import { WorkerPool } from ${JSON.stringify(new URL('../src/util/worker-pool.ts', import.meta.url).pathname)};
      const workers = new WorkerPool({
        size: 1,
        url: ${JSON.stringify(WORKER.href)},
        result: (response) => response.text,
        crashed: () => new Error('crashed'),
        exited: () => new Error('exited'),
        abort: 'interrupt',
      });
      workers.run({ text: 'answered', wait: 300 }).then((text) => console.log(text));
    `;
    const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' });
    const exited = await settledWithin(child.exited, 10_000);
    expect(exited).toEqual({ status: 'fulfilled', value: 0 });
    expect((await new Response(child.stdout).text()).trim()).toBe('ANSWERED');
  });

  test("a key at its perKey limit lets another key's task take the free worker; its own waits its turn", async () => {
    const workers = pool({ size: 2, perKey: 1 });
    try {
      const hung = workers.run({ text: 'hang' }, undefined, 'a');
      const second = workers.run({ text: 'second of a' }, undefined, 'a');
      // Queued behind both of them, and answered while the first still holds its worker.
      expect(await workers.run({ text: 'b' }, undefined, 'b')).toBe('B');
      expect(workers.pending).toBe(2);
      workers.stop(new Error('test over'));
      await expect(hung).rejects.toThrow('test over');
      await expect(second).rejects.toThrow('test over');
    } finally {
      workers.stop(new Error('test over'));
    }
  });

  test('rejects a nonsensical size, timeout or perKey', () => {
    expect(() => pool({ size: 0 })).toThrow(RangeError);
    expect(() => pool({ size: 1.5 })).toThrow(RangeError);
    expect(() => pool({ timeout: { ms: 0, error: () => new Error('never') } })).toThrow(RangeError);
    expect(() => pool({ perKey: 0 })).toThrow(RangeError);
  });
});
