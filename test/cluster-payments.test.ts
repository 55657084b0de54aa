import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { sql } from 'kysely';
import { ClusterWork, SINGLETON } from '../src/coordination/cluster-work.ts';
import { PostgresLeases } from '../src/coordination/postgres/leases.ts';
import { keepReplicaAlive, PostgresReplicaLiveness } from '../src/coordination/replica-liveness.ts';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { outboundFetch } from '../src/outbound/fetch.ts';
import { Reach } from '../src/outbound/reach.ts';
import type { PaymentWallet } from '../src/payments/codec.ts';
import { ConsumedStore } from '../src/payments/consumed-store.ts';
import { MppGateway } from '../src/payments/mpp.ts';
import { toBaseUnits } from '../src/payments/payment-terms.ts';
import { SettlementReconciler } from '../src/payments/reconciler.ts';
import { SettlementJournal, SettlementMovedOn } from '../src/payments/settlement-journal.ts';
import { UsageRepository } from '../src/query/usage-repository.ts';
import { type FakeHubWallet, startFakeHubWallet } from './fakes/hub-wallet.ts';
import { type FakeTempoRpc, startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * The settlement reconciler across replicas (issue 26; API-CONTRACT 10.3 point 6): on one private PostgreSQL,
 * replica A is a real process (its own pool, leases and journal) with a reservation whose query is "running",
 * a transaction being broadcast (`sending`, held at the Tempo RPC double) and a sent one whose receipt is
 * late; replica B, this process, holds `singleton:reconciler`. While A lives, B's reconciler leaves all three
 * rows alone, however old; once A is killed (kill -9) and its `replica:<id>` lease lapses, B finishes them:
 * the reservation released, the transaction the node never got released, the sent one confirmed from the
 * chain with its usage row written once. B's own late receipt is its own reconciler's, lease or not. And a
 * reservation released under a replica that was only stalled is refused at `sending`: never broadcast.
 *
 * Leases live 3 s here (what SVC_TEST_LEASE_TTL_MS sets in a knode process; 30 s in production).
 */

const SRC = join(import.meta.dir, '../src');
const LEASE_TTL_MS = 3_000;
const TENANT = 'tenant';
const ENDPOINT = 'endpoint';
const RECIPIENT = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';
const REPLICA_A = 'replica-a';
const REPLICA_B = 'replica-b';

/**
 * Replica A: takes its liveness lease, sends one payment (its receipt withheld: `sent`, the answer `pending`),
 * says `sent` and waits for a line on stdin (the RPC double then holds broadcasts), reserves one credential and
 * starts sending another, says `ready`, and runs until killed. Its own reconciler is left out, so that its
 * `sent` row is still unconfirmed when it dies.
 */
const REPLICA_A_SCRIPT = `
  import { keepReplicaAlive } from '${SRC}/coordination/replica-liveness.ts';
  import { PostgresLeases } from '${SRC}/coordination/postgres/leases.ts';
  import { openPostgresDatabase } from '${SRC}/db/postgres/database.ts';
  import { outboundFetch } from '${SRC}/outbound/fetch.ts';
  import { Reach } from '${SRC}/outbound/reach.ts';
  import { ConsumedStore } from '${SRC}/payments/consumed-store.ts';
  import { MppGateway } from '${SRC}/payments/mpp.ts';
  import { SettlementJournal } from '${SRC}/payments/settlement-journal.ts';
  const setup = JSON.parse(process.argv.at(-1));
  const { db } = await openPostgresDatabase(setup.url);
  const leases = new PostgresLeases(db, { holder: setup.replica, ttlMs: setup.ttlMs });
  await keepReplicaAlive(leases, (error) => console.error(error));
  const journal = new SettlementJournal(db, setup.replica);
  const outbound = async () => outboundFetch(new Reach(true, { loopback: false, private: false, hosts: [], cidrs: [] }));
  const gateway = new MppGateway({ wallets: { get: async () => setup.wallet }, consumed: new ConsumedStore(db), journal, outbound, receiptTimeoutMs: 300 });
  const terms = { realm: setup.realm, amount: BigInt(setup.amount) };
  const accept = (credential) => gateway.accept(setup.wallet, terms, credential, setup.caller);
  const usage = { tenant_id: setup.caller.tenantId, endpoint_id: setup.caller.endpointId, sender_email: setup.caller.senderEmail, status: 'success', tokens: 3, created_at: new Date().toISOString() };
  const sent = await (await accept(setup.credentials.sent)).settle(usage);
  console.log('sent ' + JSON.stringify(sent));
  await Bun.stdin.stream().getReader().read();
  await accept(setup.credentials.reserved);
  const sending = await accept(setup.credentials.sending);
  void sending.settle(usage).catch(() => undefined);
  while ((await journal.get(sending.challengeId))?.state !== 'sending') await Bun.sleep(20);
  console.log('ready');
  setInterval(() => undefined, 60_000);
`;

let postgres: PrivatePostgres;
let database: OpenedPostgres;
let rpc: FakeTempoRpc;
let hub: FakeHubWallet;
let wallet: PaymentWallet;

beforeAll(async () => {
  postgres = await startPostgres();
  database = await openPostgresDatabase(postgres.url);
  rpc = startFakeTempoRpc();
  hub = startFakeHubWallet(rpc.url);
  const time = new Date().toISOString();
  await database.db.insertInto('tenants').values({ id: TENANT, name: TENANT, created_at: time }).execute();
  await sql`INSERT INTO models (id, tenant_id, name, dtype, configuration, created_at, updated_at)
    VALUES ('model', ${TENANT}, 'model', 'openai', '{}', ${time}, ${time})`.execute(database.db);
  await sql`INSERT INTO endpoints (id, tenant_id, name, slug, model_id, response_type, created_at, updated_at)
    VALUES (${ENDPOINT}, ${TENANT}, 'paid', 'paid', 'model', 'summary', ${time}, ${time})`.execute(database.db);
  wallet = {
    tenant_id: TENANT,
    wallet_address: RECIPIENT,
    testnet: true,
    rpc_url: rpc.url,
    challenge_secret: 'a-challenge-secret-of-at-least-32-bytes',
    created_at: time,
    updated_at: time,
  };
});

afterAll(async () => {
  await hub?.close();
  await rpc?.close();
  await database?.close();
  await postgres?.stop();
});

/** Reads a child's stdout line by line, up to the line starting with `prefix`. */
async function lineStarting(lines: AsyncIterator<string>, prefix: string): Promise<string> {
  for (;;) {
    const next = await lines.next();
    if (next.done) throw new Error(`replica A ended before saying "${prefix}"`);
    if (next.value.startsWith(prefix)) return next.value;
  }
}

async function* linesOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    let end = buffered.indexOf('\n');
    while (end >= 0) {
      yield buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      end = buffered.indexOf('\n');
    }
  }
}

describe('the settlement reconciler across replicas on PostgreSQL', () => {
  const caller = { tenantId: TENANT, endpointId: ENDPOINT, senderEmail: 'erin@example.com' };
  const terms = { realm: 'replicas', amount: toBaseUnits(0.05) };
  const outbound = async () => outboundFetch(new Reach(true, { loopback: false, private: false, hosts: [], cidrs: [] }));
  const silent = { info: () => {}, warn: () => {}, error: () => {} };

  test("a live replica's rows are left alone; once it is killed and its lease lapses, the survivor finishes them", async () => {
    const db = database.db;
    const journal = new SettlementJournal(db, REPLICA_B);
    const gateway = new MppGateway({
      wallets: { get: async () => wallet },
      consumed: new ConsumedStore(db),
      journal,
      outbound,
      receiptTimeoutMs: 300,
    });
    const pay = async (consumer: string) => hub.pay(hub.addConsumer(consumer).token, gateway.challenge(wallet, terms).header);
    // One consumer each: every credential's transaction has its own payer and nonce.
    const credentials = { sent: await pay('ann'), reserved: await pay('bob'), sending: await pay('cat') };

    rpc.withholdReceipts(true);
    const setup = {
      url: postgres.url,
      replica: REPLICA_A,
      ttlMs: LEASE_TTL_MS,
      wallet,
      realm: terms.realm,
      amount: terms.amount.toString(),
      caller,
      credentials,
    };
    const replicaA: Subprocess<'pipe', 'pipe', 'pipe'> = Bun.spawn([process.execPath, '-e', REPLICA_A_SCRIPT, JSON.stringify(setup)], {
      cwd: join(import.meta.dir, '..'),
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    let killed = false;
    const replicaB = { leases: new PostgresLeases(db, { holder: REPLICA_B, ttlMs: LEASE_TTL_MS }) } as const;
    const alive = await keepReplicaAlive(replicaB.leases, () => undefined);
    const work = new ClusterWork(replicaB.leases, silent);
    const reconciler = new SettlementReconciler({
      journal,
      replicas: new PostgresReplicaLiveness(db, REPLICA_B),
      adoptsUnderLease: true,
      writeUsage: (entry) => new UsageRepository(db).recordSettlement(entry),
      paymentFailed: async () => {},
      log: silent,
      outbound,
    });
    try {
      const lines = linesOf(replicaA.stdout)[Symbol.asyncIterator]();
      const sentLine = await lineStarting(lines, 'sent ');
      expect(JSON.parse(sentLine.slice('sent '.length))).toMatchObject({ status: 'pending' });
      const sentHash = rpc.broadcasts.at(-1)?.hash as string;
      // B has a late receipt of its own (before the RPC double holds broadcasts for A's next one).
      const own = await gateway.accept(wallet, terms, await pay('dan'), caller);
      const ownUsage = {
        tenant_id: TENANT,
        endpoint_id: ENDPOINT,
        sender_email: caller.senderEmail,
        status: 'success',
        created_at: new Date().toISOString(),
      };
      expect(await own.settle(ownUsage)).toMatchObject({ status: 'pending' });
      rpc.holdBroadcasts();
      replicaA.stdin.write('go\n');
      await replicaA.stdin.flush();
      await lineStarting(lines, 'ready');
      // `sending` is written before the transaction goes out: its broadcast reaches the RPC double just after.
      await waitFor("A's broadcast held by the RPC double", async () => rpc.heldBroadcasts > 0);
      expect(rpc.heldBroadcasts).toBe(1);

      // B holds singleton:reconciler: the rows of gone replicas are its to finish.
      work.keep(SINGLETON.reconciler, { start: () => reconciler.adopt(), stop: () => reconciler.relinquish() });
      await waitFor('B holding singleton:reconciler', async () => work.holds(SINGLETON.reconciler));
      // The chain now has every receipt, A's `sent` one included: still A's to confirm, not B's.
      rpc.withholdReceipts(false);

      const rowsOfA = async () =>
        Object.fromEntries(
          (
            await db
              .withTables<{ payment_settlements: { replica: string | null; state: string; challenge_id: string } }>()
              .selectFrom('payment_settlements')
              .select(['challenge_id', 'state'])
              .where('replica', '=', REPLICA_A)
              .execute()
          ).map((row) => [row.challenge_id, row.state]),
        );
      const before = await rowsOfA();
      expect(Object.values(before).sort()).toEqual(['reserved', 'sending', 'sent']);
      const usageRows = async () =>
        Number(
          (await sql<{ count: string }>`SELECT count(*) AS count FROM query_usage WHERE payment_transaction = ${sentHash}`.execute(db))
            .rows[0]?.count,
        );

      await reconciler.reconcile();
      await reconciler.reconcile();
      expect(await rowsOfA()).toEqual(before); // A lives: nothing of its is touched, however old
      expect(await usageRows()).toBe(0);
      expect((await journal.get(own.challengeId))?.state).toBe('confirmed'); // B's own late receipt

      replicaA.kill('SIGKILL');
      killed = true;
      await replicaA.exited;
      // Killed, but its lease has not lapsed yet: still alive as far as anyone can tell.
      await reconciler.reconcile();
      expect(await rowsOfA()).toEqual(before);
      // The broadcast A was making never reached the node.
      rpc.releaseBroadcasts({ take: false });

      const after = await waitFor(
        "A's rows reconciled once its lease lapsed",
        async () => {
          await reconciler.reconcile();
          const rows = await rowsOfA();
          return Object.values(rows).every((state) => state === 'released' || state === 'confirmed') && rows;
        },
        4 * LEASE_TTL_MS,
      );
      expect(Object.values(after).sort()).toEqual(['confirmed', 'released', 'released']);
      const released = Object.keys(after).filter((id) => after[id] === 'released');
      expect(await new ConsumedStore(db).anyConsumed(released.map((id) => `knode:challenge:${id}`))).toBe(false);
      await reconciler.reconcile();
      expect(await usageRows()).toBe(1);
      expect(rpc.broadcasts.map((broadcast) => broadcast.hash).filter((hash) => hash === sentHash)).toHaveLength(1);
    } finally {
      if (!killed) replicaA.kill('SIGKILL');
      await reconciler.close();
      await work.close();
      await alive.stop();
      await replicaB.leases.close();
    }
  }, 60_000);

  test('a reservation released while its query ran (its replica taken for gone) is never broadcast', async () => {
    const journal = new SettlementJournal(database.db, 'replica-stalled');
    const gateway = new MppGateway({ wallets: { get: async () => wallet }, consumed: new ConsumedStore(database.db), journal, outbound });
    const credential = await hub.pay(hub.addConsumer('eve').token, gateway.challenge(wallet, terms).header);
    const accepted = await gateway.accept(wallet, terms, credential, caller);
    // What the survivor's reconciler does to a reservation of a replica whose liveness lease lapsed.
    expect(await new SettlementJournal(database.db, REPLICA_B).releaseFrom(accepted.challengeId, ['reserved'])).toBe(true);
    const broadcasts = rpc.broadcasts.length;
    const refused = await accepted.settle({}).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SettlementMovedOn);
    expect(rpc.broadcasts).toHaveLength(broadcasts);
    expect((await journal.get(accepted.challengeId))?.state).toBe('released');
    // Its query's clean-up releases nothing more; the credential pays again, once.
    await accepted.release();
    expect(await gateway.accept(wallet, terms, credential, caller)).toMatchObject({ challengeId: accepted.challengeId });
  });

  test('a replica that stopped gracefully (its lease released) is gone at once; a live one is not', async () => {
    const db = database.db;
    const leases = [
      new PostgresLeases(db, { holder: 'replica-c', ttlMs: LEASE_TTL_MS }),
      new PostgresLeases(db, { holder: 'replica-d', ttlMs: LEASE_TTL_MS }),
    ];
    const [stopping, staying] = await Promise.all(leases.map((each) => keepReplicaAlive(each, () => undefined)));
    const liveness = new PostgresReplicaLiveness(db, REPLICA_B);
    expect([...(await liveness.gone(['replica-c', 'replica-d', 'replica-never']))]).toEqual(['replica-never']);
    await stopping?.stop();
    expect([...(await liveness.gone(['replica-c', 'replica-d']))]).toEqual(['replica-c']);
    await staying?.stop();
    await Promise.all(leases.map((each) => each.close()));
  });
});
