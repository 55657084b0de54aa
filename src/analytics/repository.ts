import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.ts';
import { type AnalyticsDatabase, withAnalyticsTables } from './tables.ts';

/**
 * All of analytics' SQL. Every figure is counted by the database over the newest rows of the range, at most
 * `limit` of them (the service's caps): a statement on SQLite holds the event loop while it runs, so what a
 * request can make it read is bounded, and each answer says whether the cap was reached and from when its
 * rows were counted. The SQL is the common part of SQLite's and PostgreSQL's (no SQLite-only function, every
 * derived table named, numbers converted here: PostgreSQL's COUNT is a bigint and its AVG a numeric).
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

/** How much of the range was read. */
export interface Coverage {
  /** Rows counted (at most the cap). */
  rows: number;
  /** The oldest row's time among them, null when there were none. */
  oldest: string | null;
}

export interface SummaryRow extends Coverage {
  users: number;
  revenue: number;
  errors: number;
  refused: number;
  averageLatencyMs: number | null;
}

export interface SeriesRow {
  /** `YYYY-MM-DDTHH` (hour) or `YYYY-MM-DD` (day). */
  bucket: string;
  queries: number;
  users: number;
  revenue: number;
  oldest: string;
}

export interface UserRow {
  senderEmail: string;
  queries: number;
  errors: number;
  revenue: number;
  lastQueryAt: string;
}

export interface TermRow {
  term: string;
  count: number;
}

/** MPP payments collected, in USD: a payment that later failed on chain has its usage row's `error` set (usage-repository.ts). */
const REVENUE = sql`CASE WHEN payment_rail = 'mpp' AND error IS NULL AND payment_amount IS NOT NULL THEN payment_amount ELSE 0 END`;
/** The admin key and every user have an e-mail; an empty one is nobody's. */
const USER = sql`NULLIF(sender_email, '')`;
/** How many characters of an ISO timestamp name its bucket. */
const BUCKET_KEY_LENGTH = { hour: 13, day: 10 } as const;

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

  async summary(scope: Scope, limit: number): Promise<SummaryRow> {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT COUNT(*) AS queries, COUNT(DISTINCT ${USER}) AS users, SUM(${REVENUE}) AS revenue,
        SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors,
        SUM(CASE WHEN status = 'refused' THEN 1 ELSE 0 END) AS refused,
        AVG(latency_ms) AS latency, MIN(created_at) AS oldest
      FROM ${newestUsage(scope, limit)}`.execute(this.db);
    const row = rows[0] ?? {};
    return {
      rows: number(row.queries),
      users: number(row.users),
      revenue: number(row.revenue),
      errors: number(row.errors),
      refused: number(row.refused),
      averageLatencyMs: row.latency === null || row.latency === undefined ? null : Math.round(Number(row.latency)),
      oldest: (row.oldest as string | null | undefined) ?? null,
    };
  }

  /** Only the buckets that hold rows, oldest first. */
  async series(scope: Scope, bucket: 'hour' | 'day', limit: number): Promise<SeriesRow[]> {
    // A literal, not a parameter: PostgreSQL matches the select list to GROUP BY by their text.
    const key = sql`substr(created_at, 1, ${sql.lit(BUCKET_KEY_LENGTH[bucket])})`;
    const { rows } = await sql<Record<string, unknown>>`
      SELECT ${key} AS bucket, COUNT(*) AS queries, COUNT(DISTINCT ${USER}) AS users, SUM(${REVENUE}) AS revenue,
        MIN(created_at) AS oldest
      FROM ${newestUsage(scope, limit)}
      GROUP BY ${key}
      ORDER BY ${key}`.execute(this.db);
    return rows.map((row) => ({
      bucket: String(row.bucket),
      queries: number(row.queries),
      users: number(row.users),
      revenue: number(row.revenue),
      oldest: String(row.oldest),
    }));
  }

  /** The callers with the most queries (then the most revenue, then by e-mail), a page of them. */
  async topUsers(scope: Scope, limit: number, skip: number, take: number): Promise<UserRow[]> {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT sender_email, COUNT(*) AS queries, SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors,
        SUM(${REVENUE}) AS revenue, MAX(created_at) AS last_query_at
      FROM ${newestUsage(scope, limit)}
      WHERE ${USER} IS NOT NULL
      GROUP BY sender_email
      ORDER BY COUNT(*) DESC, SUM(${REVENUE}) DESC, sender_email
      LIMIT ${take} OFFSET ${skip}`.execute(this.db);
    return rows.map((row) => ({
      senderEmail: String(row.sender_email),
      queries: number(row.queries),
      errors: number(row.errors),
      revenue: number(row.revenue),
      lastQueryAt: String(row.last_query_at),
    }));
  }

  /** How many users the capped rows hold, for the top users' page total. */
  async userCount(scope: Scope, limit: number): Promise<Coverage & { users: number }> {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT COUNT(*) AS queries, COUNT(DISTINCT ${USER}) AS users, MIN(created_at) AS oldest
      FROM ${newestUsage(scope, limit)}`.execute(this.db);
    const row = rows[0] ?? {};
    return { rows: number(row.queries), users: number(row.users), oldest: (row.oldest as string | null | undefined) ?? null };
  }

  /** The most frequent terms of the newest `limit` term rows of the range, and how much was read. */
  async terms(scope: Scope, limit: number, take: number): Promise<{ terms: TermRow[]; coverage: Coverage }> {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT term, COUNT(*) AS count
      FROM ${newestTerms(scope, limit)}
      GROUP BY term
      ORDER BY COUNT(*) DESC, term
      LIMIT ${take}`.execute(this.db);
    const read = await sql<Record<string, unknown>>`
      SELECT COUNT(*) AS count, MIN(asked_hour) AS oldest FROM ${newestTerms(scope, limit)}`.execute(this.db);
    const coverage = read.rows[0] ?? {};
    return {
      terms: rows.map((row) => ({ term: String(row.term), count: number(row.count) })),
      coverage: { rows: number(coverage.count), oldest: (coverage.oldest as string | null | undefined) ?? null },
    };
  }
}

/** The newest `limit` usage rows of the scope, as a derived table named `recent`. */
function newestUsage(scope: Scope, limit: number): RawBuilder<unknown> {
  const conditions = [
    sql`tenant_id = ${scope.tenantId}`,
    sql`created_at >= ${scope.from}`,
    sql`created_at < ${scope.to}`,
    ...filters(scope),
  ];
  return sql`(
    SELECT sender_email, status, error, payment_rail, payment_amount, latency_ms, created_at
    FROM query_usage
    WHERE ${sql.join(conditions, sql` AND `)}
    ORDER BY created_at DESC
    LIMIT ${limit}
  ) AS recent`;
}

/** The newest `limit` term rows of the scope (by the hour), as a derived table named `recent`. */
function newestTerms(scope: Scope, limit: number): RawBuilder<unknown> {
  const conditions = [
    sql`tenant_id = ${scope.tenantId}`,
    sql`asked_hour >= ${scope.from}`,
    sql`asked_hour < ${scope.to}`,
    ...filters(scope),
  ];
  return sql`(
    SELECT term, asked_hour
    FROM query_terms
    WHERE ${sql.join(conditions, sql` AND `)}
    ORDER BY asked_hour DESC, id DESC
    LIMIT ${limit}
  ) AS recent`;
}

/** The endpoint and dataset filters, and the playground's questions left out, as conditions on either table. */
function filters(scope: Scope): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  if (scope.endpointId !== undefined) conditions.push(sql`endpoint_id = ${scope.endpointId}`);
  if (scope.datasetId !== undefined) {
    // The endpoints that serve the dataset now: a usage row does not keep which dataset answered it.
    conditions.push(sql`endpoint_id IN (SELECT id FROM endpoints WHERE tenant_id = ${scope.tenantId} AND dataset_id = ${scope.datasetId})`);
  }
  if (!scope.includePlayground) conditions.push(sql`origin = 'api'`);
  return conditions;
}

/** A count or sum as the driver gives it (a number, a bigint or, from PostgreSQL, text), 0 for none. */
function number(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return Number(value);
}
