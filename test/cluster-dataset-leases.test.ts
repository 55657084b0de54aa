import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { ChangeLog } from '../src/coordination/change-log.ts';
import { ClusterWork } from '../src/coordination/cluster-work.ts';
import { type DatasetIngestion, LeasedDatasets, type SelectionEntry } from '../src/coordination/dataset-leases.ts';
import { LocalLeases } from '../src/coordination/leases.ts';
import { PostgresChangeLog } from '../src/coordination/postgres/change-log.ts';
import { PostgresLeases } from '../src/coordination/postgres/leases.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { ManualClock } from './fakes/clock.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * Which replica ingests a dataset (coordination/dataset-leases.ts) and runs single-instance work
 * (coordination/cluster-work.ts), with engines that only record what they are asked: on a single node the
 * calls reach the engine exactly as before; on a private PostgreSQL, two replicas (two pools, two leases,
 * two change logs in this process) route a start, a reindex and a stop made through either one to the
 * lease holder, and a holder that stops renewing (a paused or dead process) is taken over within the TTL.
 */

const DATASET = '3f1c8f0e-0000-4000-8000-000000000001';
const TTL_MS = 1_000;

class RecordingEngine implements DatasetIngestion {
  readonly calls: string[] = [];
  constructor(private readonly name = '') {}
  async start(datasetId: string): Promise<void> {
    this.calls.push(`start ${datasetId}`);
  }
  async stop(datasetId: string, status: 'stopped' | null = 'stopped'): Promise<void> {
    this.calls.push(`stop ${datasetId} ${status}`);
    everything.push(`${this.name} stop ${datasetId} ${status}`);
  }
  async remove(datasetId: string): Promise<void> {
    this.calls.push(`remove ${datasetId}`);
    everything.push(`${this.name} remove ${datasetId}`);
  }
  async reindex(datasetId: string): Promise<void> {
    this.calls.push(`reindex ${datasetId}`);
  }
  async selectionChanged(datasetId: string, removed: readonly SelectionEntry[] = []): Promise<void> {
    this.calls.push(`selection ${datasetId} -${removed.map((entry) => entry.path).join(',')}`);
  }
}

/** Every replica's stops and removals, in the order they happened. */
const everything: string[] = [];

const quiet = { warn: () => undefined, info: () => undefined };

/** A change log nobody announces on (a single node's datasets announce nothing). */
const silentChanges: ChangeLog = {
  transaction: () => Promise.reject(new Error('not used')),
  announce: () => Promise.reject(new Error('a single node announces nothing')),
  subscribe: () => () => undefined,
  catchUp: async () => undefined,
  start: async () => undefined,
  stop: async () => undefined,
};

describe('a single node (SQLite): every call reaches the engine, as without leases', () => {
  test('start, reindex, stop, start again and remove, each awaited, in order and once', async () => {
    const engine = new RecordingEngine();
    const datasets = new LeasedDatasets({
      leases: new LocalLeases(),
      changes: silentChanges,
      engine,
      activeDatasets: async () => [{ id: 'resumed' }],
      log: quiet,
      announces: false,
    });
    await datasets.resumeAll();
    expect(engine.calls).toEqual(['start resumed']);
    await datasets.start(DATASET);
    expect(engine.calls.at(-1)).toBe(`start ${DATASET}`);
    await datasets.start(DATASET); // started again (a dataset in error is retried; a running one is left as it is)
    await datasets.reindex(DATASET);
    await datasets.stop(DATASET);
    await datasets.start(DATASET);
    await datasets.remove(DATASET);
    expect(engine.calls).toEqual([
      'start resumed',
      `start ${DATASET}`,
      `start ${DATASET}`,
      `reindex ${DATASET}`,
      `stop ${DATASET} stopped`,
      `start ${DATASET}`,
      `remove ${DATASET}`,
    ]);
    await datasets.close();
  });

  test('single-instance work starts at once and stops when closed', async () => {
    const work = new ClusterWork(new LocalLeases(), quiet);
    const calls: string[] = [];
    work.keep('singleton:heartbeats', { start: () => void calls.push('start'), stop: async () => void calls.push('stop') });
    await waitFor('the work started', async () => calls.length === 1);
    expect(work.holds('singleton:heartbeats')).toBe(true);
    await work.close();
    await waitFor('the work stopped', async () => calls.length === 2);
    expect(calls).toEqual(['start', 'stop']);
  });
});

describe('two replicas on one PostgreSQL', () => {
  let postgres: PrivatePostgres;
  const pools: OpenedPostgres[] = [];

  beforeAll(async () => {
    postgres = await startPostgres();
    pools.push(await openPostgresDatabase(postgres.url), await openPostgresDatabase(postgres.url));
  });

  afterAll(async () => {
    for (const pool of pools) await pool.close();
    await postgres?.stop();
  });

  /** A replica: its leases (on `clock`: a ManualClock never moved renews nothing), change log, datasets and engine. */
  const replica = async (holder: string, pool: OpenedPostgres, clock?: ManualClock) => {
    const leases = new PostgresLeases(pool.db, { holder, ttlMs: TTL_MS, ...(clock ? { clock } : {}) });
    const changes = new PostgresChangeLog(pool.db, { url: postgres.url, pollEveryMs: 200 });
    await changes.start();
    const engine = new RecordingEngine(holder);
    const datasets = new LeasedDatasets({ leases, changes, engine, activeDatasets: async () => [], log: quiet, announces: true });
    return {
      leases,
      engine,
      datasets,
      close: async () => {
        await datasets.close();
        await changes.stop();
        await leases.close();
      },
    };
  };

  test('a start, reindex and stop made through either replica reach the lease holder; the other only keeps asking', async () => {
    const [poolA, poolB] = pools as [OpenedPostgres, OpenedPostgres];
    const a = await replica('a', poolA);
    const b = await replica('b', poolB);
    try {
      await a.datasets.start(DATASET);
      expect(a.engine.calls).toEqual([`start ${DATASET}`]);
      expect(a.datasets.holds(DATASET)).toBe(true);
      // B heard of the start: it asks for the lease too (refused), and starts nothing.
      await waitFor('B keeping the dataset', async () => b.datasets.keeps(DATASET));
      expect(b.datasets.holds(DATASET)).toBe(false);
      expect(b.engine.calls).toEqual([]);

      // A reindex asked of B is done by A, the holder.
      await b.datasets.reindex(DATASET);
      await waitFor('A reindexing', async () => a.engine.calls.includes(`reindex ${DATASET}`));
      expect(b.engine.calls).toEqual([]);

      // A selection changed through B: A, which watches the entries, follows it, with what was taken out.
      await b.datasets.selectionChanged(DATASET, [{ path: '/srv/notes', kind: 'folder', prefix: 'notes' }]);
      await waitFor('A following the selection', async () => a.engine.calls.includes(`selection ${DATASET} -/srv/notes`));
      expect(b.engine.calls).toEqual([]);

      // A stop asked of B: B writes the status, A stops its runtime (leaving the status as B wrote it).
      await b.datasets.stop(DATASET);
      expect(b.engine.calls).toEqual([`stop ${DATASET} stopped`]);
      await waitFor('A stopping its runtime', async () => a.engine.calls.includes(`stop ${DATASET} null`));
      expect(a.datasets.holds(DATASET)).toBe(false);

      // Started again through B: the lease is free, B takes it and runs the dataset; A keeps asking.
      await b.datasets.start(DATASET);
      expect(b.datasets.holds(DATASET)).toBe(true);
      expect(b.engine.calls.at(-1)).toBe(`start ${DATASET}`);
      await Bun.sleep(300);
      expect(a.engine.calls.filter((call) => call === `start ${DATASET}`)).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a dataset deleted through the other replica is dropped only once its holder stopped it', async () => {
    const [poolA, poolB] = pools as [OpenedPostgres, OpenedPostgres];
    const dataset = '3f1c8f0e-0000-4000-8000-000000000003';
    const a = await replica('a4', poolA);
    const b = await replica('b4', poolB);
    try {
      await a.datasets.start(dataset);
      await waitFor('B keeping the dataset', async () => b.datasets.keeps(dataset));
      everything.length = 0;
      await b.datasets.remove(dataset);
      expect(everything).toEqual([`a4 stop ${dataset} null`, `b4 remove ${dataset}`]);
      expect(a.datasets.keeps(dataset)).toBe(false);
      expect(b.datasets.keeps(dataset)).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a holder that stops renewing (paused, or dead) is taken over within about the TTL', async () => {
    const [poolA, poolB] = pools as [OpenedPostgres, OpenedPostgres];
    const paused = new ManualClock();
    const dataset = '3f1c8f0e-0000-4000-8000-000000000002';
    const a = await replica('a2', poolA, paused);
    const b = await replica('b2', poolB);
    try {
      await a.datasets.start(dataset);
      expect(a.engine.calls).toEqual([`start ${dataset}`]);
      await waitFor('B keeping the dataset', async () => b.datasets.keeps(dataset));
      const since = Date.now();
      await waitFor('B taking the dataset over', async () => b.engine.calls.includes(`start ${dataset}`), 10_000);
      expect(Date.now() - since).toBeLessThan(TTL_MS + 1_000);
      expect(b.datasets.holds(dataset)).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('single-instance work runs on one replica, and moves to the other when its holder closes', async () => {
    const [poolA, poolB] = pools as [OpenedPostgres, OpenedPostgres];
    const running = new Set<string>();
    const work = (name: string, pool: OpenedPostgres) => {
      const leases = new PostgresLeases(pool.db, { holder: name, ttlMs: TTL_MS });
      const cluster = new ClusterWork(leases, quiet);
      cluster.keep('singleton:heartbeats', {
        start: () => void running.add(name),
        stop: async () => void running.delete(name),
      });
      return { cluster, leases };
    };
    const a = work('a3', poolA);
    await waitFor('A running the work', async () => running.has('a3'));
    const b = work('b3', poolB);
    await Bun.sleep(300);
    expect([...running]).toEqual(['a3']);
    await a.cluster.close();
    await a.leases.close();
    await waitFor('B running the work', async () => running.has('b3'), 5_000);
    expect([...running]).toEqual(['b3']);
    await b.cluster.close();
    await b.leases.close();
  });
});
