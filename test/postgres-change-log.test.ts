import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { type ChangeEntry, type ChangeLog, LocalChangeLog } from '../src/coordination/change-log.ts';
import { LISTENER_APPLICATION_NAME, PostgresChangeLog, type PostgresChangeLogOptions } from '../src/coordination/postgres/change-log.ts';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { ManualClock } from './fakes/clock.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * The change log on a private PostgreSQL, as replicas use it: each replica (a pool of its own) writes
 * changes in its transactions and hears everyone's. Polling is left far off (a minute) unless a test is
 * about it, so what arrives came through NOTIFY or a catch-up.
 */

let postgres: PrivatePostgres;
let replicaA: OpenedPostgres;
let replicaB: OpenedPostgres;
const started: ChangeLog[] = [];

beforeAll(async () => {
  postgres = await startPostgres();
  replicaA = await openPostgresDatabase(postgres.url);
  replicaB = await openPostgresDatabase(postgres.url);
});

afterAll(async () => {
  await Promise.all(started.map((log) => log.stop()));
  await replicaA?.close();
  await replicaB?.close();
  await postgres?.stop();
});

/** A started change log on `replica`, and what its subscriber heard. */
async function changeLogOn(replica: OpenedPostgres, options: Partial<PostgresChangeLogOptions> = {}) {
  const heard: ChangeEntry[] = [];
  const errors: unknown[] = [];
  const log = new PostgresChangeLog(replica.db, {
    url: postgres.url,
    pollEveryMs: 60_000,
    onError: (error) => errors.push(error),
    ...options,
  });
  log.subscribe((entry) => void heard.push(entry));
  await log.start();
  started.push(log);
  return { log, heard, errors };
}

async function stopAll(...logs: ChangeLog[]): Promise<void> {
  await Promise.all(logs.map((log) => log.stop()));
}

function tenantRow(id: string) {
  return { id, name: `Tenant ${id}`, created_at: new Date().toISOString() };
}

describe('the change log on PostgreSQL', () => {
  test("a committed change reaches every replica, the writer's included; a rolled-back one none", async () => {
    const a = await changeLogOn(replicaA);
    const b = await changeLogOn(replicaB);
    try {
      await a.log.transaction(async (trx, announce) => {
        await trx.insertInto('tenants').values(tenantRow('t-stop')).execute();
        announce({ kind: 'dataset.stopped', payload: { tenantId: 't-stop', datasetId: 'd1' } });
      });
      await waitFor('both replicas', async () => a.heard.length === 1 && b.heard.length === 1);
      expect(b.heard[0]).toEqual(a.heard[0] as ChangeEntry);
      expect(b.heard[0]).toMatchObject({ kind: 'dataset.stopped', payload: { tenantId: 't-stop', datasetId: 'd1' } });

      const failed = a.log.transaction(async (trx, announce) => {
        await trx.insertInto('tenants').values(tenantRow('t-rolled-back')).execute();
        announce({ kind: 'dataset.reindex', payload: { datasetId: 'd2' } });
        throw new Error('the change fails after it was announced');
      });
      await expect(failed).rejects.toThrow('the change fails');
      await a.log.announce({ kind: 'endpoint.changed', payload: { endpointId: 'e1' } });
      await waitFor('the next change', async () => b.heard.length === 2);
      expect(b.heard.map((entry) => entry.kind)).toEqual(['dataset.stopped', 'endpoint.changed']);
      const { rows } = await sql<{ kind: string }>`SELECT kind FROM change_log ORDER BY seq`.execute(replicaB.db);
      expect(rows.map((row) => row.kind)).not.toContain('dataset.reindex');
      expect(a.errors).toEqual([]);
    } finally {
      await stopAll(a.log, b.log);
    }
  });

  test('a notification wakes another replica within milliseconds', async () => {
    const a = await changeLogOn(replicaA);
    const b = await changeLogOn(replicaB);
    try {
      const latencies: number[] = [];
      for (let index = 0; index < 20; index++) {
        const { promise: arrived, resolve } = Promise.withResolvers<number>();
        const unsubscribe = b.log.subscribe(() => resolve(performance.now()));
        const sentAt = performance.now();
        await a.log.announce({ kind: 'marketplace.changed', payload: { index } });
        latencies.push((await arrived) - sentAt);
        unsubscribe();
      }
      latencies.sort((x, y) => x - y);
      console.log(`announce to delivery on another replica: p50 ${latencies[10]?.toFixed(1)} ms, max ${latencies[19]?.toFixed(1)} ms`);
      expect(latencies[10]).toBeLessThan(500);
    } finally {
      await stopAll(a.log, b.log);
    }
  });

  test('changes written at once on two replicas reach every replica once, in one order, each writer in its own', async () => {
    // Readers that also poll all the time: a reader that ran ahead of a slower commit would skip its change.
    const readers = [
      await changeLogOn(replicaA, { pollEveryMs: 5 }),
      await changeLogOn(replicaB, { pollEveryMs: 5 }),
      await changeLogOn(replicaB),
    ];
    const writers = [new PostgresChangeLog(replicaA.db, { url: postgres.url }), new PostgresChangeLog(replicaB.db, { url: postgres.url })];
    try {
      const perWriter = 40;
      await Promise.all(
        writers.flatMap((writer, w) =>
          // Several transactions of each writer in flight at once; each announces two changes.
          [0, 1].map(async (lane) => {
            for (let n = lane; n < perWriter; n += 2) {
              await writer.transaction(async (trx, announce) => {
                await trx
                  .insertInto('tenants')
                  .values(tenantRow(`w${w}-${n}`))
                  .execute();
                announce({ kind: 'endpoint.changed', payload: { writer: w, n, part: 0 } });
                announce({ kind: 'endpoint.changed', payload: { writer: w, n, part: 1 } });
              });
            }
          }),
        ),
      );
      const total = 2 * perWriter * 2;
      for (const reader of readers) {
        await waitFor('every change', async () => reader.heard.length >= total, 10_000);
        expect(reader.heard).toHaveLength(total);
        const seqs = reader.heard.map((entry) => entry.seq);
        expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
        expect(new Set(seqs).size).toBe(total);
        // The two parts of one transaction are next to each other.
        for (let index = 0; index < total; index += 2) {
          expect(reader.heard[index + 1]?.payload).toEqual({ ...reader.heard[index]?.payload, part: 1 });
        }
      }
      // Each lane of each writer made its changes one after another: they arrive in that order.
      for (const [w, lane] of [
        [0, 0],
        [0, 1],
        [1, 0],
        [1, 1],
      ]) {
        const made = readers[0]?.heard.filter((entry) => entry.payload.writer === w && (entry.payload.n as number) % 2 === lane);
        const ns = made?.map((entry) => entry.payload.n as number) ?? [];
        expect(ns).toEqual([...ns].sort((x, y) => x - y));
      }
      expect(readers[1]?.heard).toEqual(readers[0]?.heard as ChangeEntry[]);
      expect(readers[2]?.heard).toEqual(readers[0]?.heard as ChangeEntry[]);
    } finally {
      await stopAll(...readers.map((reader) => reader.log));
    }
  });

  test('a cut listening connection loses nothing: what was written meanwhile arrives once it is back', async () => {
    const b = await changeLogOn(replicaB);
    const writer = new PostgresChangeLog(replicaA.db, { url: postgres.url });
    try {
      const listeners = sql<{ pid: number; backend_start: Date }>`
        SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = ${LISTENER_APPLICATION_NAME}`;
      const [before] = (await listeners.execute(replicaA.db)).rows;
      expect(before).toBeDefined();
      await sql`SELECT pg_terminate_backend(${before?.pid}::int)`.execute(replicaA.db);
      for (let index = 0; index < 3; index++) await writer.announce({ kind: 'dataset.reindex', payload: { index } });
      await waitFor('the changes written while it was cut', async () => b.heard.length === 3, 15_000);
      const { rows: after } = await listeners.execute(replicaA.db);
      expect(after).toHaveLength(1);
      expect(after[0]?.pid).not.toBe(before?.pid);
      // The new connection began after the three changes were written: they came by its catch-up.
      const { rows: written } = await sql<{ newest: Date }>`SELECT max(created_at) AS newest FROM change_log`.execute(replicaA.db);
      expect(after[0]?.backend_start.getTime()).toBeGreaterThan(written[0]?.newest.getTime() ?? Number.POSITIVE_INFINITY);
      await writer.announce({ kind: 'dataset.reindex', payload: { index: 3 } });
      await waitFor('a change after the reconnection', async () => b.heard.length === 4);
      expect(b.heard.map((entry) => entry.payload.index)).toEqual([0, 1, 2, 3]);
    } finally {
      await stopAll(b.log);
    }
  });

  test('a missed notification: the change arrives at the next poll', async () => {
    const clock = new ManualClock();
    const b = await changeLogOn(replicaB, { clock, pollEveryMs: 5_000 });
    try {
      // Written as a writer would, but no notification follows: lost on its way, or a pooler ate it.
      await sql`INSERT INTO change_log (kind, payload) VALUES ('marketplace.changed', '{"tenantId":"t1"}')`.execute(replicaA.db);
      await Bun.sleep(300);
      expect(b.heard).toEqual([]);
      clock.advance(5_000);
      await waitFor('the poll', async () => b.heard.length === 1);
      expect(b.heard[0]).toMatchObject({ kind: 'marketplace.changed', payload: { tenantId: 't1' } });
    } finally {
      await stopAll(b.log);
    }
  });

  test('a replica hears only what is written after it starts', async () => {
    const writer = new PostgresChangeLog(replicaA.db, { url: postgres.url });
    await writer.announce({ kind: 'endpoint.changed', payload: { when: 'before' } });
    const late = await changeLogOn(replicaB);
    try {
      await writer.announce({ kind: 'endpoint.changed', payload: { when: 'after' } });
      await waitFor('the later change', async () => late.heard.length === 1);
      await late.log.catchUp();
      expect(late.heard.map((entry) => entry.payload.when)).toEqual(['after']);
    } finally {
      await stopAll(late.log);
    }
  });

  test('a subscriber that throws is reported; the others, and later changes, are still delivered', async () => {
    const b = await changeLogOn(replicaB);
    const unsubscribe = b.log.subscribe(() => {
      throw new Error('this subscriber fails');
    });
    try {
      await b.log.announce({ kind: 'dataset.stopped', payload: { n: 1 } });
      await b.log.announce({ kind: 'dataset.stopped', payload: { n: 2 } });
      await waitFor('both changes', async () => b.heard.length === 2);
      expect(b.errors.map((error) => (error as Error).message)).toEqual(['this subscriber fails', 'this subscriber fails']);
    } finally {
      unsubscribe();
      await stopAll(b.log);
    }
  });

  test('entries older than the retention are pruned, by any replica, at its pruning period', async () => {
    const clock = new ManualClock();
    const b = await changeLogOn(replicaB, { clock, pollEveryMs: 1_000, pruneEveryMs: 10_000, retentionMs: 3_600_000 });
    try {
      await b.log.announce({ kind: 'dataset.stopped', payload: { age: 'old' } });
      await b.log.announce({ kind: 'dataset.stopped', payload: { age: 'recent' } });
      await sql`UPDATE change_log SET created_at = clock_timestamp() - interval '2 hours' WHERE payload LIKE '%"old"%'`.execute(
        replicaA.db,
      );
      const count = async () =>
        (await sql<{ n: number }>`SELECT count(*) AS n FROM change_log WHERE payload LIKE '%"age"%'`.execute(replicaA.db)).rows[0]?.n;
      expect(await count()).toBe(2);
      clock.advance(5_000); // polls, not yet time to prune
      await Bun.sleep(200);
      expect(await count()).toBe(2);
      clock.advance(5_000);
      await waitFor('the pruning', async () => (await count()) === 1);
      const { rows } = await sql<{ payload: string }>`SELECT payload FROM change_log WHERE payload LIKE '%"age"%'`.execute(replicaA.db);
      expect(rows).toEqual([{ payload: '{"age":"recent"}' }]);
      expect(await b.log.prune()).toBe(0);
    } finally {
      await stopAll(b.log);
    }
  });
});

describe('the change log of a single node (SQLite)', () => {
  let sqlite: OpenedDatabase;
  let folder: string;

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'knode-change-log-'));
    sqlite = await openDatabase(folder);
  });

  afterAll(async () => {
    await sqlite?.close();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  test('a committed change is delivered in-process, in commit order; a rolled-back one never', async () => {
    const errors: unknown[] = [];
    const log = new LocalChangeLog(sqlite.db, { onError: (error) => errors.push(error) });
    const heard: ChangeEntry[] = [];
    log.subscribe((entry) => void heard.push(entry));
    log.subscribe(() => {
      throw new Error('this subscriber fails');
    });
    await log.start();
    const writes = Array.from({ length: 10 }, (_, n) =>
      log.transaction(async (trx, announce) => {
        await trx
          .insertInto('tenants')
          .values(tenantRow(`local-${n}`))
          .execute();
        announce({ kind: 'endpoint.changed', payload: { n } });
        if (n === 4) throw new Error('this change fails');
      }),
    );
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toHaveLength(1);
    await log.catchUp();
    expect(heard.map((entry) => entry.payload.n)).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9]);
    const seqs = heard.map((entry) => entry.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(errors).toHaveLength(9);
    expect(await sqlite.db.selectFrom('tenants').select('id').where('id', '=', 'local-4').execute()).toEqual([]);
    await log.stop();
  });
});
