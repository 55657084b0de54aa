import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { Store } from 'mppx';
import { type OpenedDatabase, openDatabase } from '../src/db/database.ts';
import { BadGatewayError } from '../src/domain/errors.ts';
import type { PaymentWallet } from '../src/payments/codec.ts';
import { ConsumedStore } from '../src/payments/consumed-store.ts';
import { MppGateway, PaymentRefusal, toBaseUnits } from '../src/payments/mpp.ts';
import { vectorExtensionPath } from '../src/vectors/extension.ts';
import { startFakeHubWallet } from './fakes/hub-wallet.ts';
import { startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { tempDir } from './helpers/app.ts';

/**
 * The consumed challenge ids and transactions (payments/consumed-store.ts), mppx's replay store on it, and
 * the gateway's settlement when the receipt does not come.
 */
describe('consumed payments', () => {
  let dataDir: string;
  let database: OpenedDatabase;
  let store: ConsumedStore;

  beforeAll(async () => {
    dataDir = tempDir();
    database = await openDatabase(dataDir, [vectorExtensionPath()]);
    store = new ConsumedStore(database);
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

  test("mppx's replay store: tryClaim, atomic update, values and their expiry", async () => {
    const claimed: string[] = [];
    const mppx = store.mppx(claimed);
    expect(await Store.tryClaim(mppx, 'mppx:charge:0xabc', Date.now() + 60_000)).toBe(true);
    expect(await Store.tryClaim(mppx, 'mppx:charge:0xabc', Date.now() + 60_000)).toBe(false);
    expect(claimed).toEqual(['mppx:charge:0xabc']);
    await mppx.put('value', { count: 1, big: 5n });
    expect(await mppx.get('value')).toEqual({ count: 1, big: '5' });
    expect(await mppx.update('value', (current) => ({ op: 'set', value: { ...(current as object), count: 2 }, result: 'ok' }))).toBe('ok');
    expect(await mppx.get('value')).toMatchObject({ count: 2 });
    await mppx.delete('value');
    expect(await mppx.get('value')).toBeNull();
    await mppx.put('marker', { expires: Date.now() - 1, type: 'mppx:replay' });
    expect(await mppx.get('marker')).toBeNull();
  });
});

describe('a broadcast whose receipt does not come', () => {
  test('is a 502 naming the transaction, and the credential stays used (it may still be mined)', async () => {
    const dataDir = tempDir();
    const database = await openDatabase(dataDir, [vectorExtensionPath()]);
    const rpc = startFakeTempoRpc();
    const hub = startFakeHubWallet(rpc.url);
    try {
      const wallet: PaymentWallet = {
        tenant_id: 'tenant',
        wallet_address: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00',
        testnet: true,
        rpc_url: rpc.url,
        challenge_secret: 'a-challenge-secret-of-at-least-32-bytes',
        created_at: '',
        updated_at: '',
      };
      const gateway = new MppGateway({
        wallets: { get: async () => wallet },
        consumed: new ConsumedStore(database),
        receiptTimeoutMs: 300,
      });
      const terms = { realm: 'slow-chain', amount: toBaseUnits(0.05) };
      const consumer = hub.addConsumer('erin');
      const credential = await hub.pay(consumer.token, gateway.challenge(wallet, terms).header);
      const accepted = await gateway.accept(wallet, terms, credential);
      rpc.withholdReceipts(true);
      const failure = await accepted.settle().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(BadGatewayError);
      expect((failure as BadGatewayError).detail).toBe(
        `The payment transaction ${rpc.broadcasts[0]?.hash} was sent but not confirmed in time`,
      );
      rpc.withholdReceipts(false);
      const again = await gateway.accept(wallet, terms, credential).catch((error: unknown) => error);
      expect(again).toBeInstanceOf(PaymentRefusal);
      expect((again as PaymentRefusal).reason).toBe('This payment has already been used');
      expect(rpc.broadcasts).toHaveLength(1);
    } finally {
      await hub.close();
      await rpc.close();
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
