import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.ts';
import { type AnalyticsDatabase, withAnalyticsTables } from './tables.ts';

/**
 * All of analytics' SQL. Rows are read newest first in slices (sliced-reading.ts): a slice is bounded by two
 * keys (a row's time and id, compared as a pair, so rows of one instant are never split or counted twice),
 * and each statement counts one slice, grouped so that slices add up (per caller, per bucket and caller, per
 * term). A statement on SQLite holds the event loop while it runs; a slice of a few thousand rows holds it for
 * milliseconds. The SQL is the common part of SQLite's and PostgreSQL's (row values, no SQLite-only function,
 * every derived table named, numbers converted here: PostgreSQL's COUNT is a bigint and its SUM a numeric).
 */

/** Which rows are counted: a tenant's, over [from, to), of one endpoint, or of the endpoints serving one dataset. */
export interface Scope {
  tenantId: string;
  from: string;
  to: string;
  endpointId?: string;
  datasetId?: string;
  /** false: the owner's questions from the console's playground are left out. */
  includePlayground: boolean;
}

/** A row's place in the newest-first order: its time, then its id. */
export interface Key {
  at: string;
  id: number;
}

/** The rows a slice counts: from `lower` (included) up to `upper` (left out); no bound where none is given. */
export interface Window {
  lower?: Key;
  upper?: Key;
}

/** A caller's share of a slice. */
export interface CallerPart {
  senderEmail: string;
  queries: number;
  errors: number;
  refused: number;
  revenue: number;
  latencySum: number;
  latencyCount: number;
  lastQueryAt: string;
}

/** A caller's share of one bucket of a slice. */
export interface BucketPart {
  /** `YYYY-MM-DDTHH` (hour) or `YYYY-MM-DD` (day). */
  bucket: string;
  senderEmail: string;
  queries: number;
  revenue: number;
}

export interface TermPart {
  term: string;
  count: number;
}

/** MPP payments collected, in USD: a payment that later failed on chain has its usage row's `error` set (query/usage-repository.ts). */
const REVENUE = sql`CASE WHEN payment_rail = 'mpp' AND error IS NULL AND payment_amount IS NOT NULL THEN payment_amount ELSE 0 END`;
/** How many characters of an ISO timestamp name its bucket. */
const BUCKET_KEY_LENGTH = { hour: 13, day: 10 } as const;

/** The two tables read, each with the column that orders it in time. */
const USAGE = { table: sql.table('query_usage'), time: sql.ref('created_at') };
const TERMS = { table: sql.table('query_terms'), time: sql.ref('asked_hour') };
type Source = typeof USAGE;

export class AnalyticsRepository {
  private readonly db: Kysely<AnalyticsDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = withAnalyticsTables(db);
  }

  /** The terms of one recorded question (question-terms.ts), one row each. */
  async recordTerms(
    row: { tenantId: string; endpointId: string; origin: 'api' | 'playground'; askedHour: string },
    terms: readonly string[],
  ) {
    if (terms.length === 0) return;
    await this.db
      .insertInto('query_terms')
      .values(
        terms.map((term) => ({
          tenant_id: row.tenantId,
          endpoint_id: row.endpointId,
          term,
          asked_hour: row.askedHour,
          origin: row.origin,
        })),
      )
      .execute();
  }

  async ownsEndpoint(tenantId: string, endpointId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('endpoints')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', endpointId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async ownsDataset(tenantId: string, datasetId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('datasets')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', datasetId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The key of the `rows`-th newest usage row below `upper` (undefined when fewer remain): where a slice ends. */
  usageBoundary(scope: Scope, upper: Key | undefined, rows: number): Promise<Key | undefined> {
    return this.boundary(USAGE, scope, upper, rows);
  }

  termsBoundary(scope: Scope, upper: Key | undefined, rows: number): Promise<Key | undefined> {
    return this.boundary(TERMS, scope, upper, rows);
  }

  /** A slice of usage rows by caller (what the summary and the top users add up). */
  async usageByCaller(scope: Scope, window: Window): Promise<CallerPart[]> {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT sender_email, COUNT(*) AS queries,
        SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors,
        SUM(CASE WHEN status = 'refused' THEN 1 ELSE 0 END) AS refused,
        SUM(${REVENUE}) AS revenue, SUM(latency_ms) AS latency_sum, COUNT(latency_ms) AS latency_count,
        MAX(created_at) AS last_query_at
      FROM query_usage
      WHERE ${where(USAGE, scope, window)}
      GROUP BY sender_email`.execute(this.db);
    return rows.map((row) => ({
      senderEmail: String(row.sender_email),
      queries: number(row.queries),
      errors: number(row.errors),
      refused: number(row.refused),
      revenue: number(row.revenue),
      latencySum: number(row.latency_sum),
      latencyCount: number(row.latency_count),
      lastQueryAt: String(row.last_query_at),
    }));
  }

  /** A slice of usage rows by bucket and caller (what the series adds up). */
  async usageByBucket(scope: Scope, window: Window, bucket: 'hour' | 'day'): Promise<BucketPart[]> {
    // A literal, not a parameter: PostgreSQL matches the select list to GROUP BY by their text.
    const key = sql`substr(created_at, 1, ${sql.lit(BUCKET_KEY_LENGTH[bucket])})`;
    const { rows } = await sql<Record<string, unknown>>`
      SELECT ${key} AS bucket, sender_email, COUNT(*) AS queries, SUM(${REVENUE}) AS revenue
      FROM query_usage
      WHERE ${where(USAGE, scope, window)}
      GROUP BY ${key}, sender_email`.execute(this.db);
    return rows.map((row) => ({
      bucket: String(row.bucket),
      senderEmail: String(row.sender_email),
      queries: number(row.queries),
      revenue: number(row.revenue),
    }));
  }

  /** A slice of term rows by term. */
  async termCounts(scope: Scope, window: Window): Promise<TermPart[]> {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT term, COUNT(*) AS count FROM query_terms WHERE ${where(TERMS, scope, window)} GROUP BY term`.execute(this.db);
    return rows.map((row) => ({ term: String(row.term), count: number(row.count) }));
  }

  private async boundary(source: Source, scope: Scope, upper: Key | undefined, rows: number): Promise<Key | undefined> {
    const { rows: found } = await sql<{ at: string; id: unknown }>`
      SELECT ${source.time} AS at, id FROM ${source.table}
      WHERE ${where(source, scope, { ...(upper ? { upper } : {}) })}
      ORDER BY ${source.time} DESC, id DESC
      LIMIT 1 OFFSET ${rows - 1}`.execute(this.db);
    const row = found[0];
    return row ? { at: String(row.at), id: Number(row.id) } : undefined;
  }
}

/** The scope's rows within the window, as a WHERE clause of either table. */
function where(source: Source, scope: Scope, window: Window): RawBuilder<unknown> {
  const time = source.time;
  // A window's bound replaces the range's (its rows are inside the range): given both, SQLite searched its
  // index from the looser one and a slice cost as much as the whole range above it (8x, measured).
  const conditions = [
    sql`tenant_id = ${scope.tenantId}`,
    window.lower ? sql`(${time}, id) >= (${window.lower.at}, ${window.lower.id})` : sql`${time} >= ${scope.from}`,
    window.upper ? sql`(${time}, id) < (${window.upper.at}, ${window.upper.id})` : sql`${time} < ${scope.to}`,
  ];
  if (scope.endpointId !== undefined) conditions.push(sql`endpoint_id = ${scope.endpointId}`);
  if (scope.datasetId !== undefined) {
    // The endpoints that serve the dataset now: a usage row does not keep which dataset answered it.
    conditions.push(sql`endpoint_id IN (SELECT id FROM endpoints WHERE tenant_id = ${scope.tenantId} AND dataset_id = ${scope.datasetId})`);
  }
  if (!scope.includePlayground) conditions.push(sql`origin = 'api'`);
  return sql.join(conditions, sql` AND `);
}

/** A count or sum as the driver gives it (a number, a bigint or, from PostgreSQL, text), 0 for none. */
function number(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return Number(value);
}
