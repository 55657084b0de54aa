import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { DatasetRecord } from '../src/datasets/codec.ts';
import { DatasetRepository } from '../src/datasets/repository.ts';
import { openDatabase } from '../src/db/database.ts';
import type { OpenedPostgres } from '../src/db/postgres/database.ts';
import { PostgresFixedWindows } from '../src/db/postgres/fixed-windows.ts';
import { QuotaExceededError } from '../src/domain/quotas.ts';
import type { EndpointRecord } from '../src/endpoints/codec.ts';
import { EndpointRepository } from '../src/endpoints/repository.ts';
import { FileRepository } from '../src/ingestion/files-repository.ts';
import { ConsumedStore } from '../src/payments/consumed-store.ts';
import { type NewSettlement, SettlementJournal } from '../src/payments/settlement-journal.ts';
import type { PolicyRecord } from '../src/policies/codec.ts';
import { PolicyRepository } from '../src/policies/repository.ts';
import { UsageRepository } from '../src/query/usage-repository.ts';
import { SecretBox } from '../src/security/secret-box.ts';
import { TenantRepository } from '../src/tenants/repository.ts';
import { UserRepository } from '../src/tenants/users-repository.ts';
import { startTwoReplicas, type TwoReplicas } from './helpers/postgres.ts';
import { datasetRecord, endpointRecord, marketplaceRow } from './helpers/records.ts';

/**
 * knode's repositories, unchanged, on PostgreSQL (cluster mode, issue 26): the same calls give the same
 * records as on SQLite. Rows are written by the repositories themselves; the concurrency cases go through
 * two pools, as two replicas would.
 */

let cluster: TwoReplicas;
let replicaA: OpenedPostgres;
let replicaB: OpenedPostgres;
const box = new SecretBox(Buffer.alloc(32, 7));
const SAME_TIME = '2026-01-01T00:00:00.000Z';

beforeAll(async () => {
  cluster = await startTwoReplicas();
  ({ replicaA, replicaB } = cluster);
});

afterAll(async () => {
  await cluster?.close();
});

let counter = 0;
/** A tenant with an owner, new for each test (the tests share one database). */
async function newTenant(): Promise<{ tenantId: string; userId: string; name: string }> {
  counter += 1;
  const { db } = replicaA;
  const users = new UserRepository(db);
  const tenants = new TenantRepository(db);
  const user = await users.create(`owner${counter}@example.org`, 'hash');
  const tenant = await tenants.create(`Tenant-${counter}`);
  await tenants.addMember(tenant.id, user.id, 'owner');
  return { tenantId: tenant.id, userId: user.id, name: tenant.name };
}

/** Two file types and two tags, so that lists inside a row round-trip on both engines. */
const dataset = (tenantId: string, name: string, createdAt?: string) =>
  datasetRecord(tenantId, name, createdAt, { configuration: { fileTypes: ['md', 'txt'] } });
const endpoint = (tenantId: string, slug: string, datasetId: string, createdAt?: string) =>
  endpointRecord(tenantId, slug, datasetId, createdAt, { tags: 'a,b' });

function accessPolicy(tenantId: string, endpointId: string, name: string, createdAt = SAME_TIME): PolicyRecord {
  return {
    id: crypto.randomUUID(),
    tenant_id: tenantId,
    endpoint_id: endpointId,
    name,
    policy_type: 'access',
    configuration: { mode: 'allow', patterns: ['*@example.org'] },
    created_at: createdAt,
    updated_at: createdAt,
  };
}

describe('tenants and users on PostgreSQL', () => {
  test('members, roles, granted roots, and names compared case-insensitively', async () => {
    const { tenantId, userId, name } = await newTenant();
    const tenants = new TenantRepository(replicaA.db);
    const users = new UserRepository(replicaA.db);
    expect((await tenants.findByName(name.toUpperCase()))?.id).toBe(tenantId);
    expect((await tenants.ensure(name.toLowerCase())).id).toBe(tenantId);
    expect(await users.findByEmail(`owner${counter}@example.org`)).toMatchObject({ id: userId, password_hash: 'hash' });
    expect(await tenants.isMember(tenantId, userId)).toBe(true);
    const member = await users.create(`member${counter}@example.org`, 'hash');
    await tenants.addMember(tenantId, member.id, 'member');
    expect((await tenants.listMembers(tenantId)).map((row) => row.role)).toEqual(['owner', 'member']);
    expect(await tenants.removeMember(tenantId, member.id)).toBe(true);
    expect(await tenants.removeMember(tenantId, member.id)).toBe(false);
    await tenants.setGrantedRoots(tenantId, ['/srv/a', '/srv/b']);
    expect(await tenants.grantedRoots(tenantId)).toEqual(['/srv/a', '/srv/b']);
  });

  test('the first owner is the one who registered first', async () => {
    const tenants = new TenantRepository(replicaA.db);
    const first = await tenants.firstOwnersTenantId();
    await newTenant();
    expect(await tenants.firstOwnersTenantId()).toBe(first as string);
  });

  test('a second tenant of the same name, in other letters, is a unique violation', async () => {
    const { name } = await newTenant();
    const error = await new TenantRepository(replicaA.db).create(name.toLowerCase()).catch((failure: unknown) => failure);
    expect((error as { errno?: string }).errno).toBe('23505');
  });
});

describe('datasets, endpoints and policies on PostgreSQL', () => {
  test('datasets: configurations sealed and opened, lists oldest first (inserted order within one millisecond), windows', async () => {
    const { tenantId } = await newTenant();
    const datasets = new DatasetRepository(replicaA.db, box);
    const records = ['zeta', 'alpha', 'mid'].map((name) => dataset(tenantId, name, SAME_TIME));
    for (const record of records) await datasets.insert(record, 10);
    expect((await datasets.list(tenantId)).map((row) => row.name)).toEqual(['zeta', 'alpha', 'mid']);
    expect((await datasets.list(tenantId, { skip: 1, limit: 1 })).map((row) => row.name)).toEqual(['alpha']);
    expect(await datasets.count(tenantId)).toBe(3);
    const first = records[0] as DatasetRecord;
    expect(await datasets.get(tenantId, first.id)).toEqual(first);
    await datasets.setStatus(first.id, 'error', 'folder gone');
    expect(await datasets.getAnyTenant(first.id)).toMatchObject({ status: 'error', error: 'folder gone' });
    expect((await datasets.listActive()).map((row) => row.id)).toContain(first.id);
    await datasets.update(tenantId, first.id, { summary: 'new summary', updated_at: new Date().toISOString() });
    expect((await datasets.get(tenantId, first.id))?.summary).toBe('new summary');
    await datasets.delete(tenantId, (records[2] as DatasetRecord).id);
    expect(await datasets.count(tenantId)).toBe(2);
  });

  test("datasets: ingestion counts are summed from the files' states", async () => {
    const { tenantId } = await newTenant();
    const datasets = new DatasetRepository(replicaA.db, box);
    const record = dataset(tenantId, 'counted');
    await datasets.insert(record);
    const files = [
      { path: 'a.md', status: 'indexed', chunks: 4, chunks_embedded: 4 },
      { path: 'b.md', status: 'searchable', chunks: 3, chunks_embedded: 1 },
      { path: 'c.md', status: 'queued', chunks: 0, chunks_embedded: 0 },
      { path: 'd.md', status: 'failed', chunks: 0, chunks_embedded: 0 },
      { path: 'e.md', status: 'removed', chunks: 9, chunks_embedded: 9 },
    ] as const;
    await replicaA.db
      .insertInto('dataset_files')
      .values(files.map((file) => ({ ...file, dataset_id: record.id, size: 10, mtime_ms: Date.now(), updated_at: SAME_TIME })))
      .execute();
    const counts = await datasets.ingestionCounts([record.id]);
    expect(counts.get(record.id)).toEqual({
      files_total: 4,
      files_searchable: 2,
      files_indexed: 1,
      files_pending: 2,
      files_failed: 1,
      chunks: 7,
      chunks_embedded: 5,
    });
  });

  test('endpoints: booleans and generation defaults, slugs, publications to a marketplace, deletion cascading', async () => {
    const { tenantId } = await newTenant();
    const datasets = new DatasetRepository(replicaA.db, box);
    const endpoints = new EndpointRepository(replicaA.db);
    const policies = new PolicyRepository(replicaA.db);
    const data = dataset(tenantId, 'docs');
    await datasets.insert(data);
    const records = ['b-bot', 'a-bot', 'c-bot'].map((slug) => endpoint(tenantId, slug, data.id, SAME_TIME));
    for (const record of records) await endpoints.insert(record, 10);
    expect((await endpoints.list(tenantId)).map((row) => row.slug)).toEqual(['b-bot', 'a-bot', 'c-bot']);
    expect(await datasets.linkedEndpointSlugs(tenantId, data.id)).toEqual(['a-bot', 'b-bot', 'c-bot']);
    const first = records[0] as EndpointRecord;
    expect(await endpoints.getBySlug(tenantId, 'b-bot')).toEqual(first);
    await endpoints.update(tenantId, first.id, {
      published: true,
      generation_defaults: { temperature: 0.2 },
      updated_at: new Date().toISOString(),
    });
    expect(await endpoints.getById(tenantId, first.id)).toMatchObject({ published: true, generation_defaults: { temperature: 0.2 } });

    const account = marketplaceRow(tenantId, `acme${counter}`, SAME_TIME);
    const marketplaceId = account.id;
    await replicaA.db.insertInto('marketplaces').values(account).execute();
    await endpoints.addPublication(tenantId, first.id, marketplaceId, SAME_TIME);
    await endpoints.addPublication(tenantId, first.id, marketplaceId, SAME_TIME); // a second time changes nothing
    expect(await endpoints.publishedTo([first.id])).toEqual(new Map([[first.id, [marketplaceId]]]));
    expect((await endpoints.listPublishedTo(tenantId, marketplaceId)).map((row) => row.id)).toEqual([first.id]);
    expect(await endpoints.tenantsWithPublications()).toContain(tenantId);
    await endpoints.removePublication(tenantId, first.id, marketplaceId);
    expect(await endpoints.publishedTo([first.id])).toEqual(new Map());

    await policies.insert(accessPolicy(tenantId, first.id, 'only us'));
    await endpoints.delete(tenantId, first.id);
    expect(await policies.count(tenantId, first.id)).toBe(0);
    // A dataset an endpoint still links cannot go (ON DELETE RESTRICT).
    const restricted = await datasets.delete(tenantId, data.id).catch((error: unknown) => error);
    expect((restricted as { errno?: string }).errno).toBe('23503');
  });

  test('policies: configurations parsed back, lists per endpoint in inserted order, windows, updates', async () => {
    const { tenantId } = await newTenant();
    const datasets = new DatasetRepository(replicaA.db, box);
    const endpoints = new EndpointRepository(replicaA.db);
    const policies = new PolicyRepository(replicaA.db);
    const data = dataset(tenantId, 'docs');
    await datasets.insert(data);
    const target = endpoint(tenantId, 'bot', data.id);
    await endpoints.insert(target);
    const records = ['third', 'first', 'second'].map((name) => accessPolicy(tenantId, target.id, name));
    for (const record of records) await policies.insert(record, 5);
    expect((await policies.list(tenantId, target.id)).map((row) => row.name)).toEqual(['third', 'first', 'second']);
    expect((await policies.list(tenantId, undefined, { skip: 2, limit: 5 })).map((row) => row.name)).toEqual(['second']);
    const first = records[0] as PolicyRecord;
    expect(await policies.get(tenantId, first.id)).toEqual(first);
    await policies.update(tenantId, first.id, { configuration: { mode: 'deny', patterns: ['x@example.org'] }, updated_at: SAME_TIME });
    expect((await policies.get(tenantId, first.id))?.configuration).toEqual({ mode: 'deny', patterns: ['x@example.org'] });
    await policies.delete(tenantId, first.id);
    expect(await policies.count(tenantId)).toBe(2);
  });
});

describe('usage on PostgreSQL', () => {
  test('records listed newest first, counted, read by time range; a paid answer recorded once', async () => {
    const { tenantId } = await newTenant();
    const data = dataset(tenantId, 'docs');
    await new DatasetRepository(replicaA.db, box).insert(data);
    const target = endpoint(tenantId, 'bot', data.id);
    await new EndpointRepository(replicaA.db).insert(target);
    const usage = new UsageRepository(replicaA.db);
    const row = (minute: number, origin: 'api' | 'playground' = 'api') => ({
      tenant_id: tenantId,
      endpoint_id: target.id,
      sender_email: 'reader@example.org',
      dataset_cost: 0.001,
      model_cost: 0,
      total_cost: 0.001,
      tokens: 12,
      status: 'success' as const,
      error: null,
      payment_rail: null,
      payment_amount: null,
      payment_transaction: null,
      latency_ms: 40 + minute,
      prompt_tokens: 10,
      completion_tokens: 2,
      origin,
      refused_by: null,
      created_at: `2026-01-01T00:0${minute}:00.000Z`,
    });
    for (const minute of [1, 2, 3]) await usage.record(row(minute, minute === 2 ? 'playground' : 'api'));
    expect(await usage.count(tenantId, target.id)).toBe(3);
    const listed = await usage.list(tenantId, target.id, 0, 10);
    expect(listed.map((record) => record.created_at)).toEqual([
      '2026-01-01T00:03:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
    expect(listed[0]).toMatchObject({ total_cost: 0.001, tokens: 12, payment: null });
    const between = await usage.rowsBetween(tenantId, target.id, '2026-01-01T00:01:30.000Z', '2026-01-01T00:10:00.000Z', false);
    expect(between.map((record) => record.latency_ms)).toEqual([43]);

    await sql`
      INSERT INTO payment_settlements (challenge_id, tenant_id, endpoint_id, sender_email, state, transaction_hash, raw_transaction,
        payer, amount, currency, recipient, testnet, rpc_url, consumed_keys, expires_at, created_at, updated_at)
      VALUES ('challenge-1', ${tenantId}, ${target.id}, 'reader@example.org', 'sent', '0xabc', '0xraw', '0xpayer', '1000', '0xcur',
        '0xrecipient', 1, 'http://127.0.0.1:1', '[]', ${Date.now() + 60_000}, ${SAME_TIME}, ${SAME_TIME})`.execute(replicaA.db);
    const paid = { ...row(4), payment_rail: 'mpp' as const, payment_amount: 0.001, payment_transaction: '0xabc' };
    const [once, twice] = await Promise.all([
      new UsageRepository(replicaA.db).recordOnce(paid, 'challenge-1'),
      new UsageRepository(replicaB.db).recordOnce(paid, 'challenge-1'),
    ]);
    expect([once, twice].filter(Boolean)).toHaveLength(1);
    expect(await usage.count(tenantId, target.id)).toBe(4);
    expect((await usage.list(tenantId, target.id, 0, 1))[0]?.payment).toEqual({
      rail: 'mpp',
      amount: 0.001,
      currency: 'USD',
      transaction: '0xabc',
    });
  });
});

describe('fixed windows on PostgreSQL', () => {
  test('50 hits at once from two replicas against a quota of 30: exactly 30 pass', async () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 10);
    const clock = { now: () => now, after: () => () => undefined };
    const windows = [new PostgresFixedWindows(replicaA.db, clock), new PostgresFixedWindows(replicaB.db, clock)];
    const quota = { key: 'endpoint:bot:reader', limit: 30, periodSeconds: 60 };
    const verdicts = await Promise.all(Array.from({ length: 50 }, (_, i) => (windows[i % 2] as PostgresFixedWindows).consume([quota])));
    expect(verdicts.filter((verdict) => verdict.allowed)).toHaveLength(30);
    const refused = verdicts.find((verdict) => !verdict.allowed);
    expect(refused).toEqual({ allowed: false, quota, retryAfterSeconds: 50 });
    const row = await replicaA.db.selectFrom('rate_windows').select('count').where('key', '=', quota.key).executeTakeFirstOrThrow();
    expect(row.count).toBe(30);
  });

  test('a request refused by one of its quotas counts against none; the next window starts afresh', async () => {
    let now = Date.UTC(2026, 0, 1, 13, 0, 0);
    const clock = { now: () => now, after: () => () => undefined };
    const windows = new PostgresFixedWindows(replicaA.db, clock);
    const perMinute = { key: 'general:minute', limit: 2, periodSeconds: 60 };
    const perHour = { key: 'general:hour', limit: 100, periodSeconds: 3600 };
    expect(await windows.consume([perMinute, perHour])).toEqual({ allowed: true });
    expect(await windows.consume([perMinute, perHour])).toEqual({ allowed: true });
    expect(await windows.peek([perMinute, perHour])).toMatchObject({ allowed: false, quota: perMinute });
    expect(await windows.consume([perHour, perMinute])).toEqual({ allowed: false, quota: perMinute, retryAfterSeconds: 60 });
    const hour = await replicaA.db.selectFrom('rate_windows').select('count').where('key', '=', perHour.key).executeTakeFirstOrThrow();
    expect(hour.count).toBe(2);
    now += 60_000;
    expect(await windows.consume([perMinute, perHour])).toEqual({ allowed: true });
  });
});

describe('payment consumed marks and the settlement journal on PostgreSQL', () => {
  afterEach(() => setSystemTime());

  test('20 claims of one credential at once, from two replicas: exactly one wins', async () => {
    const stores = [new ConsumedStore(replicaA.db), new ConsumedStore(replicaB.db)];
    const expiresAt = Date.now() + 60_000;
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (stores[i % 2] as ConsumedStore).claim(['challenge:c1', 'tx:0x01'], expiresAt)),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await stores[1]?.anyConsumed(['tx:0x01'])).toBe(true);
  });

  test('a claim sharing one key with a live one writes nothing; released and expired keys are free again', async () => {
    const now = Date.now();
    const store = new ConsumedStore(replicaA.db);
    expect(await store.claim(['challenge:c2', 'tx:0x02'], now + 1_000)).toBe(true);
    expect(await store.claim(['challenge:c3', 'tx:0x02'], now + 1_000)).toBe(false);
    expect(await store.anyConsumed(['challenge:c3'])).toBe(false);
    await store.release(['challenge:c2', 'tx:0x02']);
    expect(await store.claim(['challenge:c3', 'tx:0x02'], now + 1_000)).toBe(true);
    setSystemTime(new Date(now + 1_000)); // expired
    expect(await store.anyConsumed(['challenge:c3', 'tx:0x02'])).toBe(false);
    expect(await store.claim(['tx:0x02'], Date.now() + 1_000)).toBe(true);
  });

  test('20 reservations of one credential at once, from two replicas: one row and its keys, once', async () => {
    const { tenantId } = await newTenant();
    const journals = [new SettlementJournal(replicaA.db), new SettlementJournal(replicaB.db)];
    const reserved = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (journals[i % 2] as SettlementJournal).reserve(settlement(tenantId, 'race'))),
    );
    expect(reserved.filter(Boolean)).toHaveLength(1);
    expect(await journals[1]?.get('race')).toMatchObject({ state: 'reserved', amount: 10_000n, testnet: true, usage_written: false });
    expect(await new ConsumedStore(replicaB.db).anyConsumed(['knode:challenge:race'])).toBe(true);
  });

  test('a reservation whose transaction is already used writes no row and claims none of its keys', async () => {
    const { tenantId } = await newTenant();
    const journal = new SettlementJournal(replicaA.db);
    const store = new ConsumedStore(replicaB.db);
    expect(await store.claim(['knode:transaction:late'], Date.now() + 60_000)).toBe(true);
    expect(await journal.reserve(settlement(tenantId, 'late'))).toBe(false);
    expect(await journal.get('late')).toBeUndefined();
    // The challenge's key sorts before the used one: it was claimed, then rolled back with the rest.
    expect(await store.anyConsumed(['knode:challenge:late'])).toBe(false);
  });

  test('a released reservation frees its keys on every replica, and the credential can be reserved again there', async () => {
    const { tenantId } = await newTenant();
    const [onA, onB] = [new SettlementJournal(replicaA.db), new SettlementJournal(replicaB.db)];
    expect(await onA.reserve(settlement(tenantId, 'again'))).toBe(true);
    await onA.release('again');
    expect(await new ConsumedStore(replicaB.db).anyConsumed(['knode:challenge:again', 'knode:transaction:again'])).toBe(false);
    expect(await onB.reserve(settlement(tenantId, 'again'))).toBe(true);
    await onB.sending('again', { tokens: 3 });
    await onB.sent('again');
    expect(await onA.get('again')).toMatchObject({ state: 'sent', usage: { tokens: 3 } });
    expect((await onA.unsettled()).map((entry) => entry.challenge_id)).toContain('again');
    expect(await onA.transactionUsed(`0x${'ab'.repeat(32)}`)).toBe(true);
    await onA.failed('again', 'reverted');
    expect(await onB.get('again')).toMatchObject({ state: 'failed', failure: 'reverted', usage: { tokens: 3 } });
  });
});

/** A credential's settlement as payments/mpp.ts reserves it. */
function settlement(tenantId: string, challengeId: string): NewSettlement {
  return {
    challenge_id: challengeId,
    tenant_id: tenantId,
    endpoint_id: 'endpoint',
    sender_email: 'carol@example.com',
    transaction_hash: `0x${'AB'.repeat(32)}`,
    raw_transaction: '0x76',
    payer: '0x0000000000000000000000000000000000000001',
    amount: 10_000n,
    currency: '0x20c0000000000000000000000000000000000000',
    recipient: '0x742d35Cc6634c0532925a3b844bC9e7595F8fE00',
    testnet: true,
    rpc_url: 'http://127.0.0.1:1',
    consumed_keys: [`knode:challenge:${challengeId}`, `knode:transaction:${challengeId}`],
    expires_at: Date.now() + 60_000,
  };
}

describe('the shared-database counters on SQLite too', () => {
  test('the same fixed windows and consumed marks give the same answers on the embedded database', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'knode-counters-'));
    const database = await openDatabase(folder);
    try {
      const windows = new PostgresFixedWindows(database.db);
      const quota = { key: 'endpoint:bot:reader', limit: 30, periodSeconds: 60 };
      const verdicts = await Promise.all(Array.from({ length: 50 }, () => windows.consume([quota])));
      expect(verdicts.filter((verdict) => verdict.allowed)).toHaveLength(30);
      const store = new ConsumedStore(database.db);
      const claims = await Promise.all(Array.from({ length: 20 }, () => store.claim(['challenge:c1', 'tx:0x01'], Date.now() + 60_000)));
      expect(claims.filter(Boolean)).toHaveLength(1);
    } finally {
      await database.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

/**
 * What SQLite's one connection guaranteed and two replicas must get from PostgreSQL itself: counts that
 * decide an insert take the owner's row lock first (db/quotas.ts), claims of queued files skip the rows
 * another replica is claiming (ingestion/files-repository.ts).
 */
describe('guarantees across replicas', () => {
  test('tenant quotas: 10 creations at once from two replicas against a quota of 3 create exactly 3', async () => {
    const { tenantId } = await newTenant();
    const repositories = [new DatasetRepository(replicaA.db, box), new DatasetRepository(replicaB.db, box)];
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => (repositories[i % 2] as DatasetRepository).insert(dataset(tenantId, `d${i}`), 3)),
    );
    expect(await repositories[0]?.count(tenantId)).toBe(3);
    const refusals = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(refusals).toHaveLength(7);
    for (const refusal of refusals) expect(refusal).toBeInstanceOf(QuotaExceededError);
  });

  test('policy quotas: 10 policies at once from two replicas on one endpoint with room for 2 create exactly 2', async () => {
    const { tenantId } = await newTenant();
    const data = dataset(tenantId, 'docs');
    await new DatasetRepository(replicaA.db, box).insert(data);
    const target = endpoint(tenantId, 'bot', data.id);
    await new EndpointRepository(replicaA.db).insert(target);
    const repositories = [new PolicyRepository(replicaA.db), new PolicyRepository(replicaB.db)];
    await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        (repositories[i % 2] as PolicyRepository).insert(accessPolicy(tenantId, target.id, `p${i}`, new Date().toISOString()), 2),
      ),
    );
    expect(await repositories[1]?.count(tenantId, target.id)).toBe(2);
  });

  test('the file queue: 20 claims at once from two replicas never take a file twice', async () => {
    const { tenantId } = await newTenant();
    const data = dataset(tenantId, 'queue');
    await new DatasetRepository(replicaA.db, box).insert(data);
    const queues = [new FileRepository(replicaA.db), new FileRepository(replicaB.db)];
    await queues[0]?.seenAll(
      data.id,
      Array.from({ length: 40 }, (_, i) => ({ path: `f${i}.md`, size: 1, mtimeMs: 1 })),
    );
    const claimed = await Promise.all(Array.from({ length: 20 }, (_, i) => (queues[i % 2] as FileRepository).claim([data.id], 3)));
    const paths = claimed.flat().map((file) => file.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).toHaveLength(40);
  });

  test("a claim passes over the files another replica's claim holds, without waiting for it", async () => {
    const { tenantId } = await newTenant();
    const data = dataset(tenantId, 'held');
    await new DatasetRepository(replicaA.db, box).insert(data);
    const files = new FileRepository(replicaA.db);
    for (const path of ['a.md', 'b.md', 'c.md', 'd.md']) await files.seen(data.id, { path, size: 1, mtimeMs: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const hasLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    // Replica A is in the middle of a claim: the two oldest files are locked, not yet marked.
    const holding = replicaA.db.transaction().execute(async (trx) => {
      await trx
        .selectFrom('dataset_files')
        .select('path')
        .where('dataset_id', '=', data.id)
        .where('path', 'in', ['a.md', 'b.md'])
        .forUpdate()
        .execute();
      locked();
      await released;
    });
    await hasLocked;
    const claimed = await new FileRepository(replicaB.db).claim([data.id], 3);
    expect(claimed.map((file) => file.path)).toEqual(['c.md', 'd.md']);
    release();
    await holding;
    expect((await files.claim([data.id], 3)).map((file) => file.path)).toEqual(['a.md', 'b.md']);
  });
});
