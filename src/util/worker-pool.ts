/**
 * A few long-lived worker threads, each doing one task at a time, for work that would hold the calling
 * thread for long stretches (parsing a PDF, running a model). Tasks wait in one queue in arrival order
 * and go to whichever worker is free; workers start on first use, so start-up stays fast.
 *
 * A worker is trusted with one task only as long as it behaves: one that crashes, exits or runs past the
 * timeout is terminated, only its task fails, and a new worker starts for the next task. Events from a
 * worker that was already replaced are ignored: its task has been settled.
 *
 * Both messages carry an `id` that the pool gives each task and the worker answers with, so that an
 * answer is matched to its task.
 *
 * A task may name a key (whose work it is: a dataset): with `perKey`, no key holds more than that many
 * workers at once, and a waiting task of a key at its limit lets the tasks behind it go first. That is how
 * one caller's slow tasks leave a worker free for the others.
 */

/**
 * Bun's Worker, which a thread can unref (so an idle one does not keep the process alive). Spelled out so
 * the type holds where the DOM's Worker is in scope too (the browser tests' type check sees this file).
 */
type ThreadWorker = Worker & { ref(): void; unref(): void };

export interface WorkerPoolOptions<Response, Result> {
  /** Worker threads (an integer >= 1). */
  size: number;
  /** The worker's entry point. */
  url: URL | string;
  /**
   * What a task resolves with, given its worker's answer; a throw rejects the task instead (a failure the
   * worker reported). Done here rather than in a caller's `.then`, so that the promise the caller holds is
   * the one rejected: Bun reports a derived promise that rejects before its handler is attached as
   * unhandled, which a caller awaiting several tasks in turn would trip over.
   */
  result: (response: Response) => Result;
  /** A limit per task; without it a task may run as long as it takes. */
  timeout?: { ms: number; error: () => unknown };
  /** The most workers the tasks of one key may hold at once (tasks without a key are not limited). */
  perKey?: number;
  /**
   * Whether a worker that gave this answer is replaced afterwards (its task still settles with it): for a
   * worker that says it grew past a budget, so that the memory it holds goes with it.
   */
  retire?: (response: Response) => boolean;
  /** What a task fails with when its worker throws an uncaught error (Bun's ErrorEvent)... */
  crashed: (event: ErrorEvent) => unknown;
  /** ...or exits by itself. */
  exited: () => unknown;
  /**
   * What a task's AbortSignal does. Either way a task whose signal aborted is never started.
   * - `interrupt`: the task rejects with the signal's reason at once; waiting, it leaves the queue;
   *   running, its worker is terminated (the next task starts a new one). For work that cannot be
   *   stopped any other way, on workers that are cheap to start.
   * - `before-start`: the signal is looked at when a worker is about to take the task; a running task
   *   finishes. For workers that are costly to start again (a model to load) and short tasks.
   */
  abort: 'interrupt' | 'before-start';
}

interface Task<Request, Result> {
  request: Request;
  signal: AbortSignal | undefined;
  key: string | undefined;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

interface Slot<Request, Result> {
  worker?: ThreadWorker;
  task?: Task<Request, Result>;
  timer?: ReturnType<typeof setTimeout>;
}

export class WorkerPool<Request extends { id: number }, Response extends { id: number }, Result = Response> {
  readonly size: number;
  private readonly slots: Slot<Request, Result>[];
  private readonly queue: Task<Request, Result>[] = [];
  private readonly idleWaiters = new Set<() => void>();
  private nextId = 1;

  constructor(private readonly options: WorkerPoolOptions<Response, Result>) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new RangeError('worker pool size must be an integer >= 1');
    if (options.timeout && !(options.timeout.ms > 0)) throw new RangeError('worker pool timeout must be > 0');
    if (options.perKey !== undefined && !(Number.isInteger(options.perKey) && options.perKey >= 1))
      throw new RangeError('worker pool perKey must be an integer >= 1');
    this.size = options.size;
    this.slots = Array.from({ length: this.size }, () => ({}));
  }

  /** Tasks waiting or running. */
  get pending(): number {
    return this.queue.length + this.slots.filter((slot) => slot.task).length;
  }

  /**
   * Queues `message` (the pool adds its id) and resolves with the result of the worker's answer; `key`
   * says whose task it is (see `perKey`).
   */
  run(message: Omit<Request, 'id'>, signal?: AbortSignal, key?: string): Promise<Result> {
    const interrupt = this.options.abort === 'interrupt';
    if (interrupt && signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Result>((resolve, reject) => {
      const onAbort = () => this.cancel(task, signal?.reason);
      const done = () => signal?.removeEventListener('abort', onAbort);
      const task: Task<Request, Result> = {
        request: { ...message, id: this.nextId++ } as Request,
        signal,
        key,
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      };
      if (interrupt) signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(task);
      this.dispatch();
    });
  }

  /**
   * Ends every worker now; tasks waiting or running reject with `error`. The pool stays usable: a later
   * task starts a new worker.
   */
  stop(error: unknown): void {
    for (const task of this.queue.splice(0)) task.reject(error);
    for (const slot of this.slots) {
      const task = slot.task;
      this.retire(slot);
      task?.reject(error);
    }
    this.notifyIdle();
  }

  /** Ends every worker once no task waits or runs (none is failed). The pool stays usable. */
  async stopWhenIdle(): Promise<void> {
    while (this.pending > 0) await new Promise<void>((resolve) => this.idleWaiters.add(resolve));
    // Checked and stopped in the same turn: no task can slip in between and be failed.
    for (const slot of this.slots) this.retire(slot);
  }

  private cancel(task: Task<Request, Result>, reason: unknown): void {
    const waiting = this.queue.indexOf(task);
    if (waiting >= 0) {
      this.queue.splice(waiting, 1);
      task.reject(reason);
      this.notifyIdle();
      return;
    }
    const slot = this.slots.find((candidate) => candidate.task === task);
    if (!slot) return; // settled meanwhile
    this.retire(slot);
    task.reject(reason);
    this.dispatch();
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.task) continue;
      const task = this.nextTask();
      if (!task) break;
      this.start(slot, task);
    }
    this.notifyIdle();
  }

  /**
   * The first waiting task whose caller still wants it and whose key is under its limit; tasks whose
   * signal aborted leave the queue (rejected with its reason), those of a key at its limit keep their place.
   */
  private nextTask(): Task<Request, Result> | undefined {
    for (let index = 0; index < this.queue.length; ) {
      const task = this.queue[index] as Task<Request, Result>;
      if (task.signal?.aborted) {
        this.queue.splice(index, 1);
        task.reject(task.signal.reason);
        continue;
      }
      if (this.atLimit(task.key)) {
        index++;
        continue;
      }
      this.queue.splice(index, 1);
      return task;
    }
    return undefined;
  }

  private atLimit(key: string | undefined): boolean {
    const limit = this.options.perKey;
    if (key === undefined || limit === undefined) return false;
    let running = 0;
    for (const slot of this.slots) if (slot.task?.key === key) running++;
    return running >= limit;
  }

  private start(slot: Slot<Request, Result>, task: Task<Request, Result>): void {
    const worker = slot.worker ?? this.spawn(slot);
    slot.task = task;
    // A busy worker keeps the process alive (a script awaiting its answer must not exit); an idle one does not.
    worker.ref();
    const timeout = this.options.timeout;
    if (timeout) slot.timer = setTimeout(() => this.fail(slot, timeout.error()), timeout.ms);
    worker.postMessage(task.request);
  }

  private spawn(slot: Slot<Request, Result>): ThreadWorker {
    const worker = new Worker(this.options.url) as ThreadWorker;
    worker.unref();
    slot.worker = worker;
    worker.addEventListener('message', (event: MessageEvent<Response>) => {
      if (slot.worker === worker) this.settle(slot, event.data);
    });
    worker.addEventListener('error', (event: ErrorEvent) => {
      if (slot.worker === worker) this.fail(slot, this.options.crashed(event));
    });
    worker.addEventListener('close', () => {
      if (slot.worker === worker) this.fail(slot, this.options.exited());
    });
    return worker;
  }

  private settle(slot: Slot<Request, Result>, response: Response): void {
    const task = slot.task;
    if (!task || response.id !== task.request.id) return;
    if (this.options.retire?.(response)) this.retire(slot);
    else this.release(slot);
    try {
      task.resolve(this.options.result(response));
    } catch (error) {
      task.reject(error);
    }
    this.dispatch();
  }

  /** The worker is no longer trusted: its task fails, the worker goes, a new one starts on demand. */
  private fail(slot: Slot<Request, Result>, error: unknown): void {
    const task = slot.task;
    this.retire(slot);
    task?.reject(error);
    this.dispatch();
  }

  private release(slot: Slot<Request, Result>): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.task = undefined;
    slot.worker?.unref();
  }

  private retire(slot: Slot<Request, Result>): void {
    const worker = slot.worker;
    this.release(slot);
    slot.worker = undefined;
    worker?.terminate();
  }

  private notifyIdle(): void {
    if (this.pending > 0) return;
    for (const resolve of this.idleWaiters) resolve();
    this.idleWaiters.clear();
  }
}
