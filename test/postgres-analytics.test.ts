import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Kysely } from 'kysely';
import { AnalyticsRepository } from '../src/analytics/repository.ts';
import { AnalyticsService } from '../src/analytics/service.ts';
import { DatasetRepository } from '../src/datasets/repository.ts';
import type { OpenedDatabase } from '../src/db/database.ts';
import type { OpenedPostgres } from '../src/db/postgres/database.ts';
import type { Database } from '../src/db/schema.ts';
import type { Tenant } from '../src/domain/principal.ts';
import { EndpointRepository } from '../src/endpoints/repository.ts';
import { UsageRepository } from '../src/query/usage-repository.ts';
import { SecretBox } from '../src/security/secret-box.ts';
import { TenantRepository } from '../src/tenants/repository.ts';
import { ManualClock } from './fakes/clock.ts';
import { openPostgresAndSqlite, type PostgresAndSqlite } from './helpers/postgres.ts';
import { datasetRecord, endpointRecord } from './helpers/records.ts';

/**
 * The analytics repository on PostgreSQL (cluster mode) and on SQLite, fed the same rows: every route's
 * answer is the same on both, read in slices of 3 rows (so the row-value bounds, the ties of one instant and
 * the caps run on both engines), with counts, sums and averages as numbers.
 */

let engines: PostgresAndSqlite;
let pg: OpenedPostgres;
let sqlite: OpenedDatabase;
const box = new SecretBox(Buffer.alloc(32, 7));
const NOW = new Date('2026-03-20T00:00:00.000Z');
const READS = { sliceRows: 3, maxUsageRows: 1_000, maxTermRows: 1_000 };
const CAPPED = { sliceRows: 3, maxUsageRows: 6, maxTermRows: 4 };
const owners = { requireOwner: async () => {} };

interface Seeded {
  tenant: Tenant;
  endpointIds: [string, string];
  datasetId: string;
}

/** The same tenant, dataset, endpoints, usage rows and terms, through the repositories. */
async function seed(db: Kysely<Database>): Promise<Seeded> {
  const tenant = await new TenantRepository(db).create('Analytics');
  const at = '2026-03-01T00:00:00.000Z';
  const datasets = new DatasetRepository(db, box);
  // Endpoint 0 serves `docs` (the dataset filter's), endpoint 1 `other`.
  const [datasetId, otherId] = [crypto.randomUUID(), crypto.randomUUID()];
  for (const [id, name] of [
    [datasetId, 'docs'],
    [otherId, 'other'],
  ] as const) {
    await datasets.insert(datasetRecord(tenant.id, name, at, { id }));
  }
  const endpoints = new EndpointRepository(db);
  const endpointIds: [string, string] = [crypto.randomUUID(), crypto.randomUUID()];
  for (const [index, id] of endpointIds.entries()) {
    await endpoints.insert(endpointRecord(tenant.id, `ep${index}`, index === 0 ? datasetId : otherId, at, { id }));
  }
  const usage = new UsageRepository(db);
  for (let i = 0; i < 20; i++) {
    // Pairs of rows share an instant: a slice boundary falls between them.
    const created = new Date(Date.parse('2026-03-10T00:00:00.000Z') + Math.floor(i / 2) * 5_400_000).toISOString();
    await usage.record({
      tenant_id: tenant.id,
      endpoint_id: endpointIds[i % 3 === 0 ? 1 : 0],
      sender_email: `caller${i % 4}@example.com`,
      dataset_cost: 0,
      model_cost: 0,
      total_cost: 0,
      tokens: 0,
      status: i % 7 === 0 ? 'error' : i % 5 === 0 ? 'refused' : 'success',
      error: i % 7 === 0 ? 'failed' : null,
      payment_rail: i % 2 === 0 ? 'mpp' : null,
      payment_amount: i % 2 === 0 ? 0.1 : null,
      payment_transaction: i % 2 === 0 ? `0x${i}` : null,
      latency_ms: i % 6 === 0 ? null : 10 * i,
      prompt_tokens: null,
      completion_tokens: null,
      origin: i % 9 === 0 ? 'playground' : 'api',
      refused_by: null,
      created_at: created,
    });
  }
  const analytics = new AnalyticsRepository(db);
  const questions = ['sourdough bread', 'bread flour', 'sourdough starter', 'rye bread', 'sourdough'];
  for (const [i, question] of questions.entries()) {
    await analytics.recordTerms(
      { tenantId: tenant.id, endpointId: endpointIds[i % 2] as string, origin: 'api', askedHour: `2026-03-1${i}T0${i}:00:00.000Z` },
      question.split(' '),
    );
  }
  return { tenant, endpointIds, datasetId };
}

/** Every route's answer, over the whole range and filtered. */
async function answers(db: Kysely<Database>, seeded: Seeded, reads: typeof READS) {
  const service = new AnalyticsService(new AnalyticsRepository(db), owners, new ManualClock(NOW.getTime()), reads);
  const principal = { kind: 'admin' as const, email: 'admin@localhost', tenant: seeded.tenant, tenantNamed: true };
  const range = { from: '2026-03-01T00:00:00.000Z' };
  const byEndpoint = { ...range, endpoint_id: seeded.endpointIds[1] };
  const byDataset = { ...range, dataset_id: seeded.datasetId };
  const apiOnly = { ...range, include_playground: false };
  return {
    summary: await service.summary(seeded.tenant, range),
    summaryByEndpoint: await service.summary(seeded.tenant, byEndpoint),
    summaryByDataset: await service.summary(seeded.tenant, byDataset),
    summaryApiOnly: await service.summary(seeded.tenant, apiOnly),
    series: await service.series(seeded.tenant, { from: '2026-03-09T00:00:00.000Z', bucket: 'hour' }),
    seriesByDay: await service.series(seeded.tenant, { ...byDataset, bucket: 'day' }),
    topUsers: await service.topUsers(seeded.tenant, { ...range, skip: 1, limit: 2 }),
    terms: await service.terms(principal, range),
    termsByEndpoint: await service.terms(principal, byEndpoint),
  };
}

beforeAll(async () => {
  engines = await openPostgresAndSqlite('knode-analytics-');
  ({ pg, sqlite } = engines);
});

afterAll(async () => {
  await engines?.close();
});

describe('analytics on PostgreSQL and on SQLite', () => {
  let onPostgres: Seeded;
  let onSqlite: Seeded;

  beforeAll(async () => {
    onPostgres = await seed(pg.db);
    onSqlite = await seed(sqlite.db);
  });

  /** An answer without the ids that differ between the two seeds. */
  const comparable = (value: unknown, seeded: Seeded) =>
    JSON.parse(
      JSON.stringify(value)
        .replaceAll(seeded.endpointIds[0], 'endpoint-0')
        .replaceAll(seeded.endpointIds[1], 'endpoint-1')
        .replaceAll(seeded.datasetId, 'dataset'),
    );

  test('every answer is the same, read in slices of 3 rows', async () => {
    const fromPostgres = comparable(await answers(pg.db, onPostgres, READS), onPostgres);
    const fromSqlite = comparable(await answers(sqlite.db, onSqlite, READS), onSqlite);
    expect(fromPostgres).toEqual(fromSqlite);
    expect(fromSqlite.summary).toMatchObject({
      queries: 20,
      users: 4,
      revenue_usd: 0.8, // ten MPP payments, two of them on rows whose query failed
      errors: 3,
      coverage: { rows: 20, capped: false },
    });
    expect(typeof fromSqlite.summary.average_latency_ms).toBe('number');
    expect(fromSqlite.summaryByEndpoint.queries + fromSqlite.summaryByDataset.queries).toBe(20);
    expect(fromSqlite.summaryApiOnly.queries).toBe(17);
    expect(fromSqlite.series.buckets.reduce((sum: number, bucket: { queries: number }) => sum + bucket.queries, 0)).toBe(20);
    expect(fromSqlite.topUsers.total).toBe(4);
    expect(fromSqlite.terms.terms.slice(0, 2)).toEqual([
      { term: 'bread', count: 3 },
      { term: 'sourdough', count: 3 },
    ]);
  });

  test('the caps stop both at the same rows and say from when they counted', async () => {
    const fromPostgres = comparable(await answers(pg.db, onPostgres, CAPPED), onPostgres);
    const fromSqlite = comparable(await answers(sqlite.db, onSqlite, CAPPED), onSqlite);
    expect(fromPostgres).toEqual(fromSqlite);
    expect(fromSqlite.summary.coverage).toEqual({ rows: 6, row_limit: 6, capped: true, counted_from: '2026-03-10T10:30:00.000Z' });
    expect(fromSqlite.terms.coverage).toMatchObject({ rows: 6, capped: true });
  });
});
