import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { type OpenedPostgres, openPostgresDatabase } from '../src/db/postgres/database.ts';
import { type FakeHubWallet, startFakeHubWallet } from './fakes/hub-wallet.ts';
import { FAKE_ANSWER, type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { type FakeTempoRpc, startFakeTempoRpc } from './fakes/tempo-rpc.ts';
import { tempDir } from './helpers/app.ts';
import { ADMIN_KEY } from './helpers/constants.ts';
import { callKnode, type KnodeProcess, startKnodeProcess } from './helpers/knode-process.ts';
import { type PrivatePostgres, startPostgres } from './helpers/postgres.ts';
import { type RoundRobinProxy, startRoundRobinProxy } from './helpers/round-robin-proxy.ts';
import { waitFor } from './helpers/wait.ts';

/**
 * Two replicas behind one address (issue 26, item 5): two real knode processes (`bun src/main.ts`), each with
 * its own data folder, on one private PostgreSQL with the same SVC_ variables, behind a round-robin proxy
 * (test/helpers/round-robin-proxy.ts). What a client of that address is promised: a token from one replica
 * works on the other, a rate_limit policy counts both replicas' queries, an X-Payment is taken once, a
 * folder (the same path on both: shared storage) is ingested once, by the replica holding the dataset's
 * lease, and a `kill -9` of that replica hands the dataset to the other within the lease's TTL.
 *
 * Leases live SVC_TEST_LEASE_TTL_MS = 3 s here (30 s in production), so the takeover is seen in seconds.
 *
 * The server has pgvector, as managed PostgreSQL services do (a private copy of Debian's server with pgvector
 * built in, test/vendor/build-pgvector.sh): keyword, vector and hybrid answers are compared across replicas.
 * A server without pgvector (Debian's own) is test/postgres-cluster.test.ts's case.
 */

const JWT_SECRET = 'a-jwt-secret-of-at-least-32-characters';
const SECRET_KEY = Buffer.alloc(32, 7).toString('base64');
const LEASE_TTL_MS = 3_000;
const RECIPIENT = '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00';
const PASSWORD = 'correct horse battery';
const FIRST_LINE = FAKE_ANSWER.split('\n')[0] as string;

describe('two knode replicas behind one address', () => {
  let postgres: PrivatePostgres;
  let database: OpenedPostgres;
  let rpc: FakeTempoRpc;
  let wallet: FakeHubWallet;
  let model: FakeOpenAIServer;
  let proxy: RoundRobinProxy;
  let root: string;
  const replicas: KnodeProcess[] = [];
  const folders: string[] = [];
  let token: string;
  let modelId: string;

  beforeAll(async () => {
    postgres = await startPostgres({ pgvector: true });
    database = await openPostgresDatabase(postgres.url); // migrated once, before the replicas start
    rpc = startFakeTempoRpc();
    wallet = startFakeHubWallet(rpc.url);
    model = startFakeOpenAI();
    root = tempDir('knode-shared-');
    folders.push(root);
    for (const name of ['a', 'b']) {
      const dataDir = tempDir(`knode-replica-${name}-`);
      folders.push(dataDir);
      replicas.push(
        await startKnodeProcess({
          SVC_DATA_DIR: dataDir,
          SVC_DATABASE_URL: postgres.url,
          SVC_JWT_SECRET: JWT_SECRET,
          SVC_SECRET_KEY: SECRET_KEY,
          SVC_ADMIN_API_KEY: ADMIN_KEY,
          SVC_OPEN_REGISTRATION: 'true',
          SVC_INGESTION_ROOTS: root,
          SVC_RATE_LIMIT_PER_HOUR: '0',
          SVC_RATE_LIMIT_PER_MINUTE: '0',
          SVC_TEST_LEASE_TTL_MS: String(LEASE_TTL_MS),
        }),
      );
    }
    proxy = startRoundRobinProxy(replicas.map((replica) => replica.url));

    const [a] = replicas as [KnodeProcess, KnodeProcess];
    const email = 'owner@example.com';
    expect((await callKnode(a.url, 'POST', '/auth/register', { body: { email, password: PASSWORD, tenant_name: 'owner' } })).status).toBe(
      201,
    );
    token = (await callKnode(a.url, 'POST', '/auth/login', { body: { email, password: PASSWORD } })).body.access_token as string;
    // The operator grants the tenant the shared folder (the same path on both replicas).
    expect((await callKnode(a.url, 'PATCH', '/tenants/owner', { token: ADMIN_KEY, body: { ingestion_roots: [root] } })).status).toBe(200);
    const created = await callKnode(proxy.url, 'POST', '/models/', {
      token,
      body: { name: 'fake', dtype: 'openai', configuration: { model: 'fake-model', base_url: model.url, api_key: 'sk-test' } },
    });
    expect(created.status).toBe(201);
    modelId = created.body.id as string;
  }, 120_000);

  afterAll(async () => {
    await proxy?.close();
    for (const replica of replicas) await replica.stop();
    await database?.close();
    await postgres?.stop();
    await wallet?.close();
    await rpc?.close();
    await model?.close();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  test('a token one replica issued works on the other', async () => {
    const [a, b] = replicas as [KnodeProcess, KnodeProcess];
    const onB = await callKnode(b.url, 'GET', '/auth/me', { token });
    expect(onB.status).toBe(200);
    expect(onB.body.email).toBe('owner@example.com');
    const login = await callKnode(b.url, 'POST', '/auth/login', { body: { email: 'owner@example.com', password: PASSWORD } });
    expect((await callKnode(a.url, 'GET', '/auth/me', { token: login.body.access_token })).status).toBe(200);
  });

  test('50 queries at once through the address against a 30-a-minute rate_limit: exactly 30 pass', async () => {
    const endpoint = await callKnode(proxy.url, 'POST', '/endpoints/', {
      token,
      body: { name: 'limited', slug: 'limited', model_id: modelId, response_type: 'summary' },
    });
    expect(endpoint.status).toBe(201);
    const policy = await callKnode(proxy.url, 'POST', '/policies/', {
      token,
      body: { name: 'thirty', endpoint_id: endpoint.body.id, policy_type: 'rate_limit', configuration: { rate: '30/m' } },
    });
    expect(policy.status).toBe(201);
    // The window is a minute of the clock: the burst is sent well inside one.
    if (Date.now() % 60_000 > 40_000) await Bun.sleep(60_000 - (Date.now() % 60_000) + 100);
    const before = new Map(proxy.answeredBy);
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => callKnode(proxy.url, 'POST', '/endpoints/limited/query', { token, body: { messages: 'hello' } })),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(30);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    // Both replicas answered part of the burst.
    for (const replica of replicas) expect((proxy.answeredBy.get(replica.url) ?? 0) - (before.get(replica.url) ?? 0)).toBe(25);
  }, 60_000);

  test('one X-Payment sent to both replicas at once is taken once: one answer, one transaction', async () => {
    const [a, b] = replicas as [KnodeProcess, KnodeProcess];
    expect(
      (await callKnode(proxy.url, 'POST', '/settings/wallet', { token, body: { wallet_address: RECIPIENT, rpc_url: rpc.url } })).status,
    ).toBe(200);
    const endpoint = await callKnode(proxy.url, 'POST', '/endpoints/', {
      token,
      body: { name: 'paid', slug: 'paid', model_id: modelId, response_type: 'summary' },
    });
    expect(endpoint.status).toBe(201);
    const policy = await callKnode(proxy.url, 'POST', '/policies/', {
      token,
      body: { name: 'quarter', endpoint_id: endpoint.body.id, policy_type: 'mpp', configuration: { price: 0.25 } },
    });
    expect(policy.status).toBe(201);
    const ask = (base: string, payment?: string) =>
      callKnode(base, 'POST', '/endpoints/paid/query', { token, body: { messages: 'hello' }, ...(payment ? { payment } : {}) });
    const challenge = await ask(proxy.url);
    expect(challenge.status).toBe(402);
    const consumer = wallet.addConsumer('ann');
    const payment = await wallet.pay(consumer.token, challenge.headers.get('www-authenticate') as string);
    const broadcastsBefore = rpc.broadcasts.length;

    const answers = await Promise.all([ask(a.url, payment), ask(b.url, payment), ask(a.url, payment), ask(b.url, payment)]);
    const paid = answers.filter((answer) => answer.status === 200);
    expect(paid).toHaveLength(1);
    expect(paid[0]?.body.summary.message.content).toBe(FIRST_LINE);
    for (const refused of answers.filter((answer) => answer.status !== 200)) expect([402, 409]).toContain(refused.status);
    expect(rpc.broadcasts).toHaveLength(broadcastsBefore + 1);
    // And once it was answered, the same credential is a replay on either replica.
    for (const base of [a.url, b.url]) expect((await ask(base, payment)).status).toBe(402);
    expect(rpc.broadcasts).toHaveLength(broadcastsBefore + 1);
  }, 60_000);

  describe('a folder on shared storage', () => {
    let datasetId: string;
    let folder: string;
    const search = (base: string, query: string, mode = 'keyword') =>
      callKnode(base, 'POST', `/datasets/${datasetId}/search`, { token, body: { query, mode } });
    /** The documents a keyword search for `word` finds through `base` (none while it is not searchable yet). */
    const found = async (base: string, word: string): Promise<{ content: string }[]> => {
      const answer = await search(base, word);
      return answer.status === 200 ? (answer.body.documents as { content: string }[]) : [];
    };
    const leaseHolder = async (): Promise<string | undefined> => {
      const { rows } = await sql<{ holder: string; live: boolean }>`
        SELECT holder, expires_at > clock_timestamp() AS live FROM coordination_leases WHERE name = ${`dataset:${datasetId}`}`.execute(
        database.db,
      );
      return rows[0]?.live ? rows[0].holder : undefined;
    };
    const replicaOf = (holder: string) => replicas.find((replica) => holder.split('/')[1] === String(replica.process.pid));

    test('is ingested once: one replica runs the dataset, each file has its chunks once', async () => {
      folder = join(root, 'handbook');
      mkdirSync(folder);
      const words = ['amberjack', 'bluegill', 'cuttlefish', 'dogfish', 'eelpout', 'flounder'];
      for (const word of words) writeFileSync(join(folder, `${word}.md`), `# ${word}\n\nThe ${word} is a fish of the handbook.\n`);
      const created = await callKnode(proxy.url, 'POST', '/datasets/', {
        token,
        body: { name: 'handbook', dtype: 'local_file', configuration: { ingestionPath: folder } },
      });
      expect(created.body).toMatchObject({ name: 'handbook' });
      datasetId = created.body.id as string;
      for (const word of words) await waitFor(`${word} searchable`, async () => (await found(proxy.url, word)).length > 0, 60_000);
      for (const word of words) {
        const documents = await found(proxy.url, word);
        expect(documents).toHaveLength(1); // one chunk per file, indexed once
        expect(documents[0]?.content).toContain(word);
      }
      const files = await callKnode(proxy.url, 'GET', `/datasets/${datasetId}/files`, { token });
      expect(files.status).toBe(200);
      const items = (files.body.items ?? files.body) as { path: string; chunks: number }[];
      expect(items).toHaveLength(words.length);
      for (const file of items) expect(file.chunks).toBe(1);
      // Exactly one replica started the dataset's ingestion (its lease holder); the other never did.
      const holder = await leaseHolder();
      expect(holder).toBeDefined();
      const started = replicas.map((replica) => startsOf(replica, datasetId));
      expect(started.sort()).toEqual([0, 1]);
      expect(startsOf(replicaOf(holder as string) as KnodeProcess, datasetId)).toBe(1);
    }, 120_000);

    test('keyword, vector and hybrid answers agree across the replicas', async () => {
      const [a, b] = replicas as [KnodeProcess, KnodeProcess];
      const [onA, onB] = await Promise.all([search(a.url, 'fish handbook'), search(b.url, 'fish handbook')]);
      expect(onA.status).toBe(200);
      expect(onA.body.documents.length).toBeGreaterThan(1);
      expect(onB.body.documents).toEqual(onA.body.documents);
      // Vectors come after the keyword phase: every file's chunk is embedded (by either replica) before comparing.
      await waitFor(
        'every chunk embedded',
        async () => {
          const files = await callKnode(proxy.url, 'GET', `/datasets/${datasetId}/files`, { token });
          const items = (files.body.items ?? files.body) as { chunks: number; chunks_embedded: number }[];
          return items.length === 6 && items.every((file) => file.chunks_embedded === file.chunks);
        },
        90_000,
      );
      for (const mode of ['vector', 'hybrid']) {
        const [fromA, fromB] = await Promise.all([
          search(a.url, 'a fish called flounder', mode),
          search(b.url, 'a fish called flounder', mode),
        ]);
        expect(fromA.status).toBe(200);
        expect(fromA.body.documents.length).toBeGreaterThan(0);
        expect(fromB.body.documents).toEqual(fromA.body.documents);
        if (mode === 'hybrid') expect(fromA.body.documents[0].content).toContain('flounder');
      }
    }, 120_000);

    test('the single-instance work runs on one replica each: heartbeats, reconciler, calibrator', async () => {
      const { rows } = await sql<{ name: string; holder: string }>`
        SELECT name, holder FROM coordination_leases WHERE name LIKE 'singleton:%' AND expires_at > clock_timestamp() ORDER BY name`.execute(
        database.db,
      );
      expect(rows.map((row) => row.name)).toEqual(['singleton:calibrator', 'singleton:heartbeats', 'singleton:reconciler']);
      for (const row of rows) expect(replicaOf(row.holder)).toBeDefined();
    });

    test('a stop and a start made through the replica that does not hold the dataset reach the one that does', async () => {
      const holder = replicaOf((await leaseHolder()) as string) as KnodeProcess;
      const other = replicas.find((replica) => replica !== holder) as KnodeProcess;
      const stopped = await callKnode(other.url, 'POST', `/datasets/${datasetId}/stop`, { token });
      expect(stopped.status).toBe(200);
      expect(stopped.body.status).toBe('stopped');
      // The holder heard of it through the change log: it let the lease go and watches the folder no more.
      await waitFor('the lease released', async () => (await leaseHolder()) === undefined, 10_000);
      writeFileSync(join(folder, 'hake.md'), '# hake\n\nThe hake came while the handbook was stopped.\n');
      await Bun.sleep(1_500);
      expect(await found(proxy.url, 'hake')).toHaveLength(0);
      const startsBefore = startsOf(other, datasetId);
      const started = await callKnode(other.url, 'POST', `/datasets/${datasetId}/start`, { token });
      expect(started.status).toBe(200);
      // Started through `other`, which now holds the lease and reconciles the folder with the index.
      await waitFor('the file added while stopped searchable', async () => (await found(proxy.url, 'hake')).length === 1, 30_000);
      expect(replicaOf((await leaseHolder()) as string)).toBe(other);
      expect(startsOf(other, datasetId)).toBe(startsBefore + 1);
      expect(await found(proxy.url, 'amberjack')).toHaveLength(1);
    }, 60_000);

    test('kill -9 of the lease holder: the other replica takes the dataset over and indexes a new file within the TTL and a margin', async () => {
      const holder = replicaOf((await leaseHolder()) as string) as KnodeProcess;
      const survivor = replicas.find((replica) => replica !== holder) as KnodeProcess;
      const survivorStarts = startsOf(survivor, datasetId);
      holder.process.kill('SIGKILL');
      await holder.process.exited;
      const killedAt = Date.now();
      writeFileSync(join(folder, 'grouper.md'), '# grouper\n\nThe grouper joined the handbook after the kill.\n');
      await waitFor('the new file searchable through the survivor', async () => (await found(proxy.url, 'grouper')).length === 1, 60_000);
      const handedOverInMs = Date.now() - killedAt;
      // TTL (the dead holder's lease lapsing), then the survivor starts the dataset: embedder, scan, one file.
      expect(handedOverInMs).toBeLessThan(LEASE_TTL_MS + 15_000);
      console.log(`dataset handed over and the new file indexed ${handedOverInMs} ms after kill -9 (lease TTL ${LEASE_TTL_MS} ms)`);
      expect(replicaOf((await leaseHolder()) as string)).toBe(survivor);
      expect(startsOf(survivor, datasetId)).toBe(survivorStarts + 1);
      // The files indexed before the kill are not indexed again by the survivor: each still has one chunk.
      expect(await found(proxy.url, 'amberjack')).toHaveLength(1);
      // And the single-instance work the killed replica held is the survivor's too, once its leases lapsed.
      await waitFor(
        'every singleton lease held by the survivor',
        async () => {
          const { rows } = await sql<{ holder: string }>`
            SELECT holder FROM coordination_leases WHERE name LIKE 'singleton:%' AND expires_at > clock_timestamp()`.execute(database.db);
          return rows.length === 3 && rows.every((row) => replicaOf(row.holder) === survivor);
        },
        LEASE_TTL_MS + 5_000,
      );
    }, 90_000);
  });
});

/** How many times a replica logged that it started the dataset's ingestion. */
function startsOf(replica: KnodeProcess, datasetId: string): number {
  return replica
    .log()
    .split('\n')
    .filter((line) => line.includes('"dataset ingestion started"') && line.includes(datasetId)).length;
}
