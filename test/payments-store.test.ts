import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, setSystemTime, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { BadGatewayError } from '../src/domain/errors.ts';
import { outboundFetch } from '../src/outbound/fetch.ts';
import { Reach } from '../src/outbound/reach.ts';
import type { PaymentWallet } from '../src/payments/codec.ts';
import { ConsumedStore } from '../src/payments/consumed-store.ts';
import { MppGateway } from '../src/payments/mpp.ts';
import { PaymentRefusal, toBaseUnits } from '../src/payments/payment-terms.ts';
import { SettlementReconciler } from '../src/payments/reconciler.ts';
import { SettlementJournal } from '../src/payments/settlement-journal.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { type FakeHubWallet, startFakeHubWallet } from './fakes/hub-wallet.ts';
import { type FakeTempoRpc, startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { tempDir } from './helpers/app.ts';

/**
 * The consumed challenge ids and transactions (payments/consumed-store.ts), the settlement journal on them
 * (payments/settlement-journal.ts), and the gateway's settlement when the receipt does not come in time or
 * the node cannot be reached (payments/mpp.ts, payments/reconciler.ts).
 */
describe('consumed payments', () => {
  let dataDir: string;
  let database: OpenedDatabase;
  let store: ConsumedStore;

  beforeAll(async () => {
    dataDir = tempDir();
    database = await openDatabase(dataDir, [vectorExtensionPath()]);
    store = new ConsumedStore(database.db);
  });
  afterAll(async () => {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  afterEach(() => setSystemTime());

  test('keys are claimed together or not at all, until they expire', async () => {
    const expires = Date.now() + 60_000;
    expect(await store.claim(['a', 'b'], expires)).toBe(true);
    expect(await store.claim(['b', 'c'], expires)).toBe(false);
    expect(await store.anyConsumed(['c'])).toBe(false);
    expect(await store.anyConsumed(['c', 'a'])).toBe(true);
    setSystemTime(new Date(expires + 1));
    expect(await store.anyConsumed(['a', 'b'])).toBe(false);
    expect(await store.claim(['b', 'c'], Date.now() + 60_000)).toBe(true);
  });

  test('released keys can be claimed again', async () => {
    const expires = Date.now() + 60_000;
    expect(await store.claim(['d'], expires)).toBe(true);
    await store.release(['d']);
    expect(await store.claim(['d'], expires)).toBe(true);
  });

  test('concurrent claims of one key: exactly one wins', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => store.claim(['race'], Date.now() + 60_000)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});

describe('the settlement journal', () => {
  let dataDir: string;
  let database: OpenedDatabase;
  let journal: SettlementJournal;
  let store: ConsumedStore;
  const entry = (id: string) => ({
    challenge_id: id,
    tenant_id: 'tenant',
    endpoint_id: 'endpoint',
    sender_email: 'carol@example.com',
    transaction_hash: `0x${'12'.repeat(32)}` as const,
    raw_transaction: '0x76' as const,
    payer: '0x0000000000000000000000000000000000000001' as const,
    amount: 10_000n,
    currency: '0x20c0000000000000000000000000000000000000' as const,
    recipient: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00' as const,
    testnet: true,
    rpc_url: 'http://127.0.0.1:1',
    consumed_keys: [`knode:challenge:${id}`, `knode:transaction:${id}`],
    expires_at: Date.now() + 60_000,
  });

  beforeAll(async () => {
    dataDir = tempDir();
    database = await openDatabase(dataDir, [vectorExtensionPath()]);
    journal = new SettlementJournal(database.db);
    store = new ConsumedStore(database.db);
  });
  afterAll(async () => {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('a reservation claims its keys with its row; a release frees both, and the credential can be reserved again', async () => {
    await database.db
      .insertInto('tenants')
      .values({ id: 'tenant', name: 'tenant', created_at: '' } as never)
      .execute();
    expect(await journal.reserve(entry('c1'))).toBe(true);
    expect(await store.anyConsumed(['knode:challenge:c1'])).toBe(true);
    expect(await journal.reserve(entry('c1'))).toBe(false);
    expect((await journal.get('c1'))?.state).toBe('reserved');
    await journal.release('c1');
    expect((await journal.get('c1'))?.state).toBe('released');
    expect(await store.anyConsumed(['knode:challenge:c1', 'knode:transaction:c1'])).toBe(false);
    expect(await journal.reserve(entry('c1'))).toBe(true);
    await journal.sending('c1', { tokens: 3 });
    await journal.sent('c1');
    const sent = await journal.get('c1');
    expect(sent).toMatchObject({ state: 'sent', usage: { tokens: 3 }, usage_written: false, delivered_at: null, amount: 10_000n });
    expect((await journal.unsettled()).map((row) => row.challenge_id)).toEqual(['c1']);
    expect((await journal.withoutUsage()).map((row) => row.challenge_id)).toEqual(['c1']);
    await journal.confirmed('c1');
    expect(await journal.unsettled()).toEqual([]);
  });
});

describe('a broadcast whose receipt does not come in time', () => {
  const caller = { tenantId: 'tenant', endpointId: 'endpoint', senderEmail: 'erin@example.com' };
  let dataDir: string;
  let database: OpenedDatabase;
  let rpc: FakeTempoRpc;
  let hub: FakeHubWallet;
  let wallet: PaymentWallet;
  let journal: SettlementJournal;

  beforeEach(async () => {
    dataDir = tempDir();
    database = await openDatabase(dataDir, [vectorExtensionPath()]);
    rpc = startFakeTempoRpc();
    hub = startFakeHubWallet(rpc.url);
    await database.db
      .insertInto('tenants')
      .values({ id: 'tenant', name: 'tenant', created_at: '' } as never)
      .execute();
    wallet = {
      tenant_id: 'tenant',
      wallet_address: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00',
      testnet: true,
      rpc_url: rpc.url,
      challenge_secret: 'a-challenge-secret-of-at-least-32-bytes',
      created_at: '',
      updated_at: '',
    };
    journal = new SettlementJournal(database.db);
  });
  afterEach(async () => {
    await hub.close();
    await rpc.close();
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // The fake RPC listens on loopback: the calls go through the outbound module as the first owner's would.
  const outbound = async () => outboundFetch(new Reach(true, { loopback: false, private: false, hosts: [], cidrs: [] }));
  const gatewayOf = (options: { receiptTimeoutMs?: number } = {}) =>
    new MppGateway({ wallets: { get: async () => wallet }, consumed: new ConsumedStore(database.db), journal, outbound, ...options });

  test('is `pending`, not an error; an undelivered answer may be asked again on the same payment; the reconciler confirms it', async () => {
    const gateway = gatewayOf({ receiptTimeoutMs: 300 });
    const terms = { realm: 'slow-chain', amount: toBaseUnits(0.05) };
    const consumer = hub.addConsumer('erin');
    const credential = await hub.pay(consumer.token, gateway.challenge(wallet, terms).header);
    const accepted = await gateway.accept(wallet, terms, credential, caller);
    expect((await journal.get(accepted.challengeId))?.state).toBe('reserved');
    rpc.withholdReceipts(true);
    const settlement = await accepted.settle({ tokens: 1 });
    expect(settlement).toEqual({ transaction: rpc.broadcasts[0]?.hash as `0x${string}`, status: 'pending' });
    expect((await journal.get(accepted.challengeId))?.state).toBe('sent');

    // The answer was not handed out (say the connection broke) and the query ended (as the mpp hook's post
    // says): the same caller gets it on the same payment.
    accepted.ended();
    const again = await gateway.accept(wallet, terms, credential, caller);
    expect(await again.settle({})).toEqual(settlement);
    expect(rpc.broadcasts).toHaveLength(1);
    // Another caller, or the same payment once its answer was delivered, is a replay.
    const other = await gateway
      .accept(wallet, terms, credential, { ...caller, senderEmail: 'mallory@example.com' })
      .catch((error: unknown) => error);
    expect((other as PaymentRefusal).reason).toBe('This payment has already been used');
    await again.delivered();
    const replay = await gateway.accept(wallet, terms, credential, caller).catch((error: unknown) => error);
    expect(replay).toBeInstanceOf(PaymentRefusal);
    expect((replay as PaymentRefusal).reason).toBe('This payment has already been used');

    const written: string[] = [];
    const reconciler = new SettlementReconciler({
      journal,
      writeUsage: async (entry) => {
        written.push(entry.challenge_id);
      },
      paymentFailed: async () => {},
      log: { info: () => {}, warn: () => {}, error: () => {} },
      outbound,
    });
    await reconciler.reconcile();
    expect((await journal.get(accepted.challengeId))?.state).toBe('sent'); // still no receipt
    rpc.withholdReceipts(false);
    await reconciler.reconcile();
    expect((await journal.get(accepted.challengeId))?.state).toBe('confirmed');
    expect(written).toContain(accepted.challengeId);
    expect(rpc.broadcasts).toHaveLength(1);
  });

  test('a copy of a sent payment is not answered while its query is still being answered, here or on a live replica', async () => {
    const terms = { realm: 'two-copies', amount: toBaseUnits(0.05) };
    let aGone = false;
    const replicaA = new MppGateway({
      wallets: { get: async () => wallet },
      consumed: new ConsumedStore(database.db),
      journal: new SettlementJournal(database.db, 'replica-a'),
      outbound,
      receiptTimeoutMs: 300,
    });
    const replicaB = new MppGateway({
      wallets: { get: async () => wallet },
      consumed: new ConsumedStore(database.db),
      journal: new SettlementJournal(database.db, 'replica-b'),
      outbound,
      receiptTimeoutMs: 300,
      replicas: { self: 'replica-b', gone: async (names) => new Set(aGone ? names : []) },
    });
    const credential = await hub.pay(hub.addConsumer('fay').token, replicaA.challenge(wallet, terms).header);
    const first = await replicaA.accept(wallet, terms, credential, caller);
    rpc.withholdReceipts(true);
    expect((await first.settle({ tokens: 1 })).status).toBe('pending');

    // Sent, not yet handed out: the copy that reached the same process, and the one that reached B, are refused.
    const here = await replicaA.accept(wallet, terms, credential, caller).catch((error: unknown) => error);
    expect((here as PaymentRefusal).reason).toBe('This payment has already been used');
    const there = await replicaB.accept(wallet, terms, credential, caller).catch((error: unknown) => error);
    expect((there as PaymentRefusal).reason).toBe('This payment has already been used');
    // A's query ended without its answer going out, and A is gone: the caller's retry on B is answered, unpaid again.
    first.ended();
    aGone = true;
    const retry = await replicaB.accept(wallet, terms, credential, caller);
    expect((await retry.settle({})).transaction).toBe(first.transaction);
    expect(rpc.broadcasts.filter((sent) => sent.hash === first.transaction)).toHaveLength(1);
    rpc.withholdReceipts(false);
  });

  test('the RPC refused at the broadcast (unreachable): a 502, nothing charged, the credential freed', async () => {
    const gateway = gatewayOf();
    const terms = { realm: 'down-chain', amount: toBaseUnits(0.05) };
    const credential = await hub.pay(hub.addConsumer('erin').token, gateway.challenge(wallet, terms).header);
    const accepted = await gateway.accept(wallet, terms, credential, caller);
    rpc.fail('eth_sendRawTransaction', { status: 503 });
    const failure = await accepted.settle({}).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BadGatewayError);
    expect((await journal.get(accepted.challengeId))?.state).toBe('released');
    rpc.fail('eth_sendRawTransaction', undefined);
    const retried = await gateway.accept(wallet, terms, credential, caller);
    expect((await retried.settle({})).status).toBe('charged');
    expect(rpc.broadcasts).toHaveLength(1);
  });
});
