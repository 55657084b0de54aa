import { Database } from 'bun:sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type FakeHubWallet, startFakeHubWallet } from './fakes/hub-wallet.ts';
import { FAKE_ANSWER, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeTempoRpc, startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { callKnode, type KnodeProcess, startKnodeProcess } from './helpers/knode-process.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * A paid answer survives `kill -9` (API-CONTRACT 10.3 point 6, issue 21): a real knode process
 * (`bun src/main.ts`) is killed while its payment's transaction is on its way, and started again on the same
 * data folder, with the Tempo RPC double (in this process) holding the broadcast, or the receipt, at the
 * moment of the kill. The settlement journal decides what the restart does: a transaction the node took is
 * confirmed from the chain and its usage row written, and the same X-Payment gets the answer again without
 * paying again; one the node never received is released, and the same X-Payment pays normally, once.
 */

const RECIPIENT = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';
const FIRST_LINE = FAKE_ANSWER.split('\n')[0] as string;
const PASSWORD = 'correct horse battery';

describe('a paid answer and kill -9', () => {
  let rpc: FakeTempoRpc;
  let wallet: FakeHubWallet;
  let model: FakeOpenAIServer;
  const running: KnodeProcess[] = [];
  const folders: string[] = [];

  beforeAll(() => {
    rpc = startFakeTempoRpc();
    wallet = startFakeHubWallet(rpc.url);
    model = startFakeOpenAI();
  });
  afterAll(async () => {
    for (const knode of running) await knode.stop();
    await wallet.close();
    await rpc.close();
    await model.close();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  const start = async (dataDir: string) => {
    const knode = await startKnodeProcess({
      SVC_DATA_DIR: dataDir,
      SVC_ADMIN_API_KEY: ADMIN_KEY,
      SVC_OPEN_REGISTRATION: 'true',
      SVC_INGESTION_ROOTS: dataDir,
      SVC_RATE_LIMIT_PER_HOUR: '0',
      SVC_RATE_LIMIT_PER_MINUTE: '0',
      SVC_LOG_LEVEL: 'info',
    });
    running.push(knode);
    return knode;
  };

  const kill9 = async (knode: KnodeProcess) => {
    knode.process.kill('SIGKILL');
    await knode.process.exited;
  };

  const call = (knode: KnodeProcess, method: string, path: string, options: { token?: string; body?: unknown; payment?: string } = {}) =>
    callKnode(knode.url, method, path, options);

  /** An owner with a wallet on the RPC double and a paid endpoint (25 cents a query); its token. */
  const setUp = async (knode: KnodeProcess, name: string): Promise<string> => {
    const email = `${name}@example.com`;
    expect((await call(knode, 'POST', '/auth/register', { body: { email, password: PASSWORD, tenant_name: name } })).status).toBe(201);
    const token = (await call(knode, 'POST', '/auth/login', { body: { email, password: PASSWORD } })).body.access_token as string;
    expect((await call(knode, 'POST', '/settings/wallet', { token, body: { wallet_address: RECIPIENT, rpc_url: rpc.url } })).status).toBe(
      200,
    );
    const created = await call(knode, 'POST', '/models/', {
      token,
      body: { name: 'fake', dtype: 'openai', configuration: { model: 'fake-model', base_url: model.url, api_key: 'sk-test' } },
    });
    const endpoint = await call(knode, 'POST', '/endpoints/', {
      token,
      body: { name: 'paid', slug: 'paid', model_id: created.body.id, response_type: 'summary' },
    });
    expect(endpoint.status).toBe(201);
    const policy = await call(knode, 'POST', '/policies/', {
      token,
      body: { name: 'quarter', endpoint_id: endpoint.body.id, policy_type: 'mpp', configuration: { price: 0.25 } },
    });
    expect(policy.status).toBe(201);
    return token;
  };

  const ask = (knode: KnodeProcess, token: string, payment?: string) =>
    call(knode, 'POST', '/endpoints/paid/query', { token, body: { messages: 'hello' }, ...(payment ? { payment } : {}) });

  /** The journal's rows, read from the database file (WAL: readable while knode runs). */
  const journal = (dataDir: string) => {
    const sqlite = new Database(join(dataDir, 'knode.db'), { readonly: true });
    try {
      return sqlite.query<{ state: string; usage_written: number }, []>('SELECT state, usage_written FROM payment_settlements').all();
    } finally {
      sqlite.close();
    }
  };

  const usage = async (knode: KnodeProcess, token: string) =>
    (await call(knode, 'GET', '/endpoints/paid/usage', { token })).body as { status: string; payment: { transaction: string } | null }[];

  test('killed after the broadcast: the restart confirms it and writes its usage; the same X-Payment gets the answer, no new charge', async () => {
    const dataDir = tempDir();
    folders.push(dataDir);
    const first = await start(dataDir);
    const token = await setUp(first, 'crashafter');
    const consumer = wallet.addConsumer('ann');
    const payment = await wallet.pay(consumer.token, (await ask(first, token)).headers.get('www-authenticate') as string);
    const before = rpc.broadcasts.length;

    rpc.withholdReceipts(true);
    const lost = ask(first, token, payment).catch((error: unknown) => error);
    // The node took the transaction and knode is waiting for its receipt: the journal says `sent`.
    await waitFor(
      'the broadcast and a receipt poll',
      async () => rpc.broadcasts.length === before + 1 && rpc.calls.at(-1) === 'eth_getTransactionReceipt',
    );
    expect(journal(dataDir)).toEqual([{ state: 'sent', usage_written: 0 }]);
    await kill9(first);
    expect(await lost).toBeInstanceOf(Error); // the caller's connection broke: no answer
    const hash = rpc.broadcasts.at(-1)?.hash;
    rpc.withholdReceipts(false);

    const second = await start(dataDir);
    // Start-up reconciles: the receipt is in, so the row is confirmed and the usage row written.
    await waitFor('the journal confirmed', async () => journal(dataDir)[0]?.state === 'confirmed');
    const rows = await waitFor('the usage row', async () => {
      const rows = await usage(second, token);
      return rows.length > 0 && rows;
    });
    expect(rows).toEqual([
      expect.objectContaining({ status: 'success', payment: expect.objectContaining({ rail: 'mpp', amount: 0.25, transaction: hash }) }),
    ]);

    const retried = await ask(second, token, payment);
    expect(retried.status).toBe(200);
    expect(retried.body.summary.message.content).toBe(FIRST_LINE);
    expect(retried.body.policy_metadata.entries[0]).toMatchObject({
      status: 'charged',
      amount: 0.25,
      transaction: { rail: 'mpp', id: hash },
    });
    expect(rpc.broadcasts).toHaveLength(before + 1);
    expect(await usage(second, token)).toHaveLength(1);
    // Now the answer was delivered: the same X-Payment once more is a replay.
    const replay = await ask(second, token, payment);
    expect(replay.status).toBe(402);
    expect(replay.body.detail).toContain('This payment has already been used');
    expect(rpc.broadcasts).toHaveLength(before + 1);
    await second.stop();
  }, 120_000);

  test('killed before the broadcast: the restart releases it; the same X-Payment pays normally, once', async () => {
    const dataDir = tempDir();
    folders.push(dataDir);
    const first = await start(dataDir);
    const token = await setUp(first, 'crashbefore');
    const consumer = wallet.addConsumer('bob');
    const payment = await wallet.pay(consumer.token, (await ask(first, token)).headers.get('www-authenticate') as string);
    const before = rpc.broadcasts.length;

    rpc.holdBroadcasts();
    const lost = ask(first, token, payment).catch((error: unknown) => error);
    // The answer is ready and the transaction on its way to the node, which has not taken it: `sending`.
    await waitFor('the broadcast to be on its way', async () => rpc.heldBroadcasts === 1);
    expect(journal(dataDir)).toEqual([{ state: 'sending', usage_written: 0 }]);
    await kill9(first);
    expect(await lost).toBeInstanceOf(Error);
    rpc.releaseBroadcasts({ take: false }); // the node never got it
    expect(rpc.broadcasts).toHaveLength(before);

    const second = await start(dataDir);
    // No receipt, and the node does not know the transaction: no money moved, the credential is good again.
    await waitFor('the reservation released', async () => journal(dataDir)[0]?.state === 'released');
    expect(await usage(second, token)).toEqual([]);

    const retried = await ask(second, token, payment);
    expect(retried.status).toBe(200);
    expect(retried.body.policy_metadata.entries[0]).toMatchObject({ status: 'charged', amount: 0.25 });
    expect(rpc.broadcasts).toHaveLength(before + 1);
    const rows = await usage(second, token);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.payment?.transaction).toBe(rpc.broadcasts.at(-1)?.hash as string);
    expect(journal(dataDir)).toEqual([{ state: 'confirmed', usage_written: 1 }]);
    await second.stop();
  }, 120_000);

  test('killed while the answer is made (reserved, never sent): the restart frees the credential; it pays normally, once', async () => {
    const dataDir = tempDir();
    folders.push(dataDir);
    const first = await start(dataDir);
    const token = await setUp(first, 'crashduring');
    const consumer = wallet.addConsumer('cid');
    const payment = await wallet.pay(consumer.token, (await ask(first, token)).headers.get('www-authenticate') as string);
    const before = rpc.broadcasts.length;

    model.behave({ delayMs: 60_000 });
    const generations = model.requests.length;
    const lost = ask(first, token, payment).catch((error: unknown) => error);
    await waitFor('the generation to be under way', async () => model.requests.length > generations);
    expect(journal(dataDir)).toEqual([{ state: 'reserved', usage_written: 0 }]);
    await kill9(first);
    expect(await lost).toBeInstanceOf(Error);
    model.behave({});

    const second = await start(dataDir);
    await waitFor('the reservation released', async () => journal(dataDir)[0]?.state === 'released');
    const retried = await ask(second, token, payment);
    expect(retried.status).toBe(200);
    expect(retried.body.policy_metadata.entries[0]).toMatchObject({ status: 'charged', amount: 0.25 });
    expect(rpc.broadcasts).toHaveLength(before + 1);
    expect(await usage(second, token)).toHaveLength(1);
    await second.stop();
  }, 120_000);
});
