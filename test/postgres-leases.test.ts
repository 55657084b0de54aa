import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { sql } from 'kysely';
import { keepLease } from '../src/coordination/lease-keeper.ts';
import { type Lease, LeaseLostError, LocalLeases } from '../src/coordination/leases.ts';
import { PostgresLeases } from '../src/coordination/postgres/leases.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { ManualClock } from './fakes/clock.ts';
import { type PrivatePostgres, startTwoReplicas, type TwoReplicas } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * Leases on a private PostgreSQL, as replicas take them: two pools in this process (two replicas' worth of
 * connections), and two real processes for a holder killed with `kill -9`. A replica whose clock is a
 * ManualClock that the test does not move renews nothing: it behaves as a paused process (a long GC, a
 * stopped VM) that wakes up after its lease was taken over.
 */

let cluster: TwoReplicas;
let postgres: PrivatePostgres;
let replicaA: OpenedPostgres;
let replicaB: OpenedPostgres;

beforeAll(async () => {
  cluster = await startTwoReplicas();
  ({ postgres, replicaA, replicaB } = cluster);
});

afterAll(async () => {
  await cluster?.close();
});

function acquired(result: Awaited<ReturnType<PostgresLeases['acquire']>>): Lease {
  if (!result.acquired) throw new Error(`expected the lease, held by ${result.holder}`);
  return result.lease;
}

describe('leases on PostgreSQL', () => {
  test('of two replicas asking at once, one gets the lease and the other is told who holds it', async () => {
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 60_000 });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 60_000 });
    try {
      for (let round = 0; round < 20; round++) {
        const name = `dataset:race-${round}`;
        const [fromA, fromB] = await Promise.all([a.acquire(name), b.acquire(name)]);
        expect([fromA.acquired, fromB.acquired].filter(Boolean)).toHaveLength(1);
        const loser = fromA.acquired ? fromB : fromA;
        expect(loser).toMatchObject({ acquired: false, holder: fromA.acquired ? 'a' : 'b' });
        if (!loser.acquired) expect(loser.retryInMs).toBeGreaterThan(50_000);
      }
      // A replica asking for a lease it already holds is refused too: one holder means one piece of work.
      expect(await a.acquire('dataset:race-0')).toMatchObject({ acquired: false });
      expect(await b.acquire('dataset:race-0')).toMatchObject({ acquired: false });
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a holder that keeps renewing keeps its lease past the TTL', async () => {
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 800, renewEveryMs: 200 });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 800 });
    try {
      const lease = acquired(await a.acquire('singleton:heartbeats'));
      await Bun.sleep(2_000);
      expect(await b.acquire('singleton:heartbeats')).toMatchObject({ acquired: false, holder: 'a' });
      expect(lease.signal.aborted).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a released lease is taken at once, with a larger token, and the releaser is told', async () => {
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 60_000 });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 60_000 });
    try {
      const first = acquired(await a.acquire('singleton:tunnel:acme'));
      await first.release();
      expect(first.signal.reason).toBeInstanceOf(LeaseLostError);
      expect((first.signal.reason as LeaseLostError).why).toBe('released');
      const second = acquired(await b.acquire('singleton:tunnel:acme'));
      expect(second.token).toBeGreaterThan(first.token);
      // The same replica taking it back later gets a larger token again: tokens never go back.
      await second.release();
      const third = acquired(await a.acquire('singleton:tunnel:acme'));
      expect(third.token).toBeGreaterThan(second.token);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a lease not renewed for its TTL is taken over; the old holder learns it at its next renewal', async () => {
    const paused = new ManualClock();
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 700, renewEveryMs: 200, clock: paused });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 700 });
    try {
      const old = acquired(await a.acquire('dataset:paused'));
      const askedAt = Date.now();
      const taken = await waitFor('the takeover', async () => {
        const result = await b.acquire('dataset:paused');
        return result.acquired ? result.lease : undefined;
      });
      expect(Date.now() - askedAt).toBeGreaterThanOrEqual(600);
      expect(taken.token).toBeGreaterThan(old.token);
      expect(old.signal.aborted).toBe(false); // paused: it has not looked yet
      paused.advance(200); // it wakes and renews
      await waitFor('the old holder to hear it', async () => old.signal.aborted);
      expect((old.signal.reason as LeaseLostError).why).toBe('taken over');
      expect(taken.signal.aborted).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("fencing: the old holder's write is refused after a takeover", async () => {
    const paused = new ManualClock();
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 500, clock: paused });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 60_000 });
    try {
      const old = acquired(await a.acquire('dataset:fenced'));
      await waitFor('the takeover', async () => (await b.acquire('dataset:fenced')).acquired);
      const write = replicaA.db.transaction().execute(async (trx) => {
        await old.fence(trx);
        await trx.insertInto('tenants').values({ id: 'late', name: 'Late write', created_at: new Date().toISOString() }).execute();
      });
      await expect(write).rejects.toBeInstanceOf(LeaseLostError);
      expect(await replicaA.db.selectFrom('tenants').select('id').where('id', '=', 'late').execute()).toEqual([]);
      expect(old.signal.aborted).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a write fenced by the holder holds a takeover off until it commits', async () => {
    const paused = new ManualClock();
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 300, clock: paused });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 60_000 });
    try {
      const lease = acquired(await a.acquire('dataset:writing'));
      let takeover: Promise<Awaited<ReturnType<PostgresLeases['acquire']>>> | undefined;
      let takenBeforeCommit: Promise<boolean> | undefined;
      await replicaA.db.transaction().execute(async (trx) => {
        await lease.fence(trx);
        await Bun.sleep(600); // the lease lapses while the write is under way
        takeover = b.acquire('dataset:writing');
        // Taken before the commit, B would not see the fenced write yet. (Whether B's answer or A's commit is
        // handled first here says nothing: both can arrive in the same turn once the row is free.)
        takenBeforeCommit = takeover.then(async () => {
          const seen = await replicaB.db.selectFrom('tenants').select('id').where('id', '=', 'fenced').execute();
          return seen.length === 0;
        });
        await Bun.sleep(400);
        await trx.insertInto('tenants').values({ id: 'fenced', name: 'Fenced write', created_at: new Date().toISOString() }).execute();
      });
      expect(await takeover).toMatchObject({ acquired: true });
      expect(await takenBeforeCommit).toBe(false);
      expect(await replicaA.db.selectFrom('tenants').select('id').where('id', '=', 'fenced').execute()).toEqual([{ id: 'fenced' }]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a holder that cannot renew gives the lease up at its own deadline, before anyone may take it', async () => {
    const clock = new ManualClock();
    const errors: unknown[] = [];
    const gone = await openPostgresDatabase(postgres.url);
    const a = new PostgresLeases(gone.db, { holder: 'a', ttlMs: 30_000, clock, onError: (error) => errors.push(error) });
    const lease = acquired(await a.acquire('dataset:unreachable'));
    await gone.close(); // the database is out of reach from now on
    clock.advance(10_000); // the first renewal fails
    await waitFor('the failed renewal', async () => errors.length > 0);
    expect(lease.signal.aborted).toBe(false);
    clock.advance(20_000);
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as LeaseLostError).why).toBe('not renewed in time');
    // Its row says it expires no earlier than the holder's deadline.
    const { rows } = await sql<{ left: number }>`
      SELECT extract(epoch FROM expires_at - clock_timestamp())::float8 AS left
      FROM coordination_leases WHERE name = 'dataset:unreachable'`.execute(replicaB.db);
    expect(rows[0]?.left).toBeGreaterThan(20);
  });

  test('two replicas keeping one lease never hold it at the same time', async () => {
    const a = new PostgresLeases(replicaA.db, { holder: 'a', ttlMs: 600, renewEveryMs: 150 });
    const b = new PostgresLeases(replicaB.db, { holder: 'b', ttlMs: 600, renewEveryMs: 150 });
    const spans: { holder: string; token: number; from: number; to: number }[] = [];
    const work = (holder: string) => (lease: Lease) => {
      const span = { holder, token: lease.token, from: performance.now(), to: Number.POSITIVE_INFINITY };
      spans.push(span);
      lease.signal.addEventListener('abort', () => {
        span.to = performance.now();
      });
      // Each holder gives the lease up after a while: the other (or itself again) takes it.
      setTimeout(() => void lease.release(), 50 + Math.random() * 100);
    };
    const keepers = [
      keepLease(a, 'dataset:churn', work('a'), { retryEveryMs: 30 }),
      keepLease(b, 'dataset:churn', work('b'), { retryEveryMs: 30 }),
    ];
    // At least 3 s of churn, and until both replicas have held it (which of them takes a released lease is a race:
    // under load one replica won every one for 3 s in a CI run), so that the checks below see handovers between them.
    await Bun.sleep(3_000);
    await waitFor('both replicas to have held the lease', async () => new Set(spans.map((span) => span.holder)).size === 2, 30_000);
    await Promise.all(keepers.map((keeper) => keeper.stop()));
    await a.close();
    await b.close();
    expect(spans.length).toBeGreaterThan(10);
    expect(new Set(spans.map((span) => span.holder))).toEqual(new Set(['a', 'b']));
    const ordered = [...spans].sort((x, y) => x.from - y.from);
    for (let index = 1; index < ordered.length; index++) {
      const [before, after] = [ordered[index - 1], ordered[index]] as [(typeof spans)[number], (typeof spans)[number]];
      expect(after.from).toBeGreaterThanOrEqual(before.to);
      expect(after.token).toBeGreaterThan(before.token);
    }
  });
});

const KEEPER = `
  import { keepLease } from '${join(import.meta.dir, '../src/coordination/lease-keeper.ts')}';
  import { PostgresLeases } from '${join(import.meta.dir, '../src/coordination/postgres/leases.ts')}';
  import { openPostgresDatabase } from '${join(import.meta.dir, '../src/db/postgres/database.ts')}';
  const [url, holder, ttl] = process.argv.slice(-3);
  const { db } = await openPostgresDatabase(url);
  const leases = new PostgresLeases(db, { holder, ttlMs: Number(ttl) });
  keepLease(leases, 'dataset:processes', (lease) => {
    console.log(JSON.stringify({ event: 'acquired', token: lease.token }));
    lease.signal.addEventListener('abort', () => console.log(JSON.stringify({ event: 'lost' })));
  }, { onError: (error) => console.error(String(error)) });
  console.log(JSON.stringify({ event: 'ready' }));
  setInterval(() => undefined, 60_000); // keeps the process alive until it is killed
`;

interface KeeperProcess {
  readonly process: Bun.Subprocess<'ignore', 'pipe', 'pipe'>;
  readonly events: { event: string; token?: number; at: number }[];
}

function startKeeper(holder: string, ttlMs: number): KeeperProcess {
  const child = Bun.spawn([process.execPath, '-e', KEEPER, postgres.url, holder, String(ttlMs)], {
    cwd: join(import.meta.dir, '..'),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const keeper: KeeperProcess = { process: child, events: [] };
  void (async () => {
    let buffered = '';
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) keeper.events.push({ ...JSON.parse(line), at: performance.now() });
    }
  })();
  return keeper;
}

function eventOf(keeper: KeeperProcess, event: string) {
  return keeper.events.find((entry) => entry.event === event);
}

describe('leases across two processes', () => {
  test('the holder killed with kill -9: the other process takes over within the TTL and a margin, with a larger token', async () => {
    const ttlMs = 2_000;
    const first = startKeeper('first', ttlMs);
    const second = startKeeper('second', ttlMs);
    try {
      await waitFor('the first holder', async () => eventOf(first, 'acquired') ?? eventOf(second, 'acquired'));
      const [holder, other] = eventOf(first, 'acquired') ? [first, second] : [second, first];
      await waitFor('the other process', async () => eventOf(other, 'ready'));
      // Alive and renewing: the other process waits for more than two TTLs and gets nothing.
      await Bun.sleep(2.5 * ttlMs);
      expect(eventOf(other, 'acquired')).toBeUndefined();

      holder.process.kill('SIGKILL');
      const killedAt = performance.now();
      const takeover = await waitFor('the takeover', async () => eventOf(other, 'acquired'), 20_000);
      const handover = takeover.at - killedAt;
      console.log(`takeover ${Math.round(handover)} ms after kill -9 (TTL ${ttlMs} ms)`);
      expect(handover).toBeLessThan(ttlMs + 1_500);
      expect(takeover.token).toBeGreaterThan(eventOf(holder, 'acquired')?.token ?? Number.POSITIVE_INFINITY);
    } finally {
      for (const keeper of [first, second]) {
        keeper.process.kill('SIGKILL');
        await keeper.process.exited;
      }
    }
  });
});

describe('leases of a single node (SQLite)', () => {
  test('every free name is granted; a held one is refused until released; tokens grow', async () => {
    const leases = new LocalLeases('node');
    const first = acquired(await leases.acquire('dataset:one'));
    expect(await leases.acquire('dataset:one')).toMatchObject({ acquired: false, holder: 'node' });
    const other = acquired(await leases.acquire('dataset:two'));
    await first.release();
    expect((first.signal.reason as LeaseLostError).why).toBe('released');
    await expect(first.fence(undefined as never)).rejects.toBeInstanceOf(LeaseLostError);
    const again = acquired(await leases.acquire('dataset:one'));
    expect(again.token).toBeGreaterThan(other.token);
    await again.fence(undefined as never);
    await leases.close();
    expect(again.signal.aborted).toBe(true);
    expect(other.signal.aborted).toBe(true);
  });

  test('a keeper on a single node holds the lease at once and gives it up when stopped', async () => {
    const clock = new ManualClock();
    const leases = new LocalLeases('node');
    const held: Lease[] = [];
    const keeper = keepLease(leases, 'singleton:heartbeats', (lease) => void held.push(lease), { clock });
    clock.advance(0);
    await waitFor('the lease', async () => held.length === 1);
    expect(keeper.lease).toBe(held[0]);
    await keeper.stop();
    expect(held[0]?.signal.aborted).toBe(true);
    expect(keeper.lease).toBeUndefined();
  });
});
