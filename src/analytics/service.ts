import { NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Principal, Tenant } from '../domain/principal.ts';
import { hourOf, questionTerms } from './question-terms.ts';
import type { AnalyticsRepository, Coverage, Scope } from './repository.ts';

/** What a route asks for (its query string, validated by its schema). */
export interface AnalyticsRequest {
  from?: string;
  to?: string;
  endpoint_id?: string;
  dataset_id?: string;
  include_playground?: boolean;
}

type Bucket = 'hour' | 'day';

const DAY_MS = 86_400_000;
const BUCKET_MS: Record<Bucket, number> = { hour: 3_600_000, day: DAY_MS };
/** The range shown when none is asked. */
const DEFAULT_SPAN_MS = 30 * DAY_MS;
/** The longest range: a year, whatever the bucket. */
export const MAX_SPAN_DAYS = 366;
/** By hour, a month at most (744 buckets: what a chart can still show). */
export const MAX_HOURLY_SPAN_DAYS = 31;
/**
 * The most usage rows one answer reads, newest first. Counting them takes tens of milliseconds on SQLite
 * (measured: test/analytics-scale.test.ts), during which the event loop waits; more would be the range's
 * older rows, and the answer says from when it counted.
 */
export const MAX_USAGE_ROWS = 100_000;
/** The most term rows the word cloud reads (about 10,000 questions of a few words each). */
export const MAX_TERM_ROWS = 50_000;
export const DEFAULT_TOP_USERS = 10;
export const DEFAULT_TERMS = 60;

/** Where the query pipeline's recorded questions go (query/query-record.ts `QuestionObserver`). */
export interface AskedQuestion {
  tenantId: string;
  endpointId: string;
  origin: 'api' | 'playground';
  question: string;
  at: Date;
}

/** Who owns a tenant (tenants/service.ts): the word cloud is theirs alone. */
export interface Owners {
  requireOwner(principal: Principal, tenant: Tenant, what: string): Promise<void>;
}

interface Range {
  scope: Scope;
  answer: { from: string; to: string; endpoint_id: string | null; dataset_id: string | null };
}

/** Tenant-wide analytics: the figures of every endpoint's queries, or of one endpoint's, or one dataset's. */
export class AnalyticsService {
  constructor(
    private readonly repository: AnalyticsRepository,
    private readonly owners: Owners,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** A recorded question's terms are kept (never the question); the query does not wait on, or fail by, this. */
  async questionAsked(asked: AskedQuestion): Promise<void> {
    await this.repository.recordTerms(
      { tenantId: asked.tenantId, endpointId: asked.endpointId, origin: asked.origin, askedHour: hourOf(asked.at) },
      questionTerms(asked.question),
    );
  }

  async summary(tenant: Tenant, request: AnalyticsRequest) {
    const { scope, answer } = await this.range(tenant, request);
    const row = await this.repository.summary(scope, MAX_USAGE_ROWS);
    return {
      ...answer,
      coverage: coverage(row, MAX_USAGE_ROWS, scope.from),
      queries: row.rows,
      users: row.users,
      revenue_usd: money(row.revenue),
      errors: row.errors,
      refused: row.refused,
      average_latency_ms: row.averageLatencyMs,
    };
  }

  async series(tenant: Tenant, request: AnalyticsRequest & { bucket?: Bucket }) {
    const bucket = request.bucket ?? 'day';
    const { scope, answer } = await this.range(tenant, request, bucket === 'hour' ? MAX_HOURLY_SPAN_DAYS : MAX_SPAN_DAYS);
    const rows = await this.repository.series(scope, bucket, MAX_USAGE_ROWS);
    const byStart = new Map(rows.map((row) => [startOf(row.bucket, bucket), row]));
    const size = BUCKET_MS[bucket];
    const first = Math.floor(Date.parse(scope.from) / size) * size;
    const buckets = [];
    for (let start = first; start < Date.parse(scope.to); start += size) {
      const iso = new Date(start).toISOString();
      const row = byStart.get(iso);
      buckets.push({ start: iso, queries: row?.queries ?? 0, users: row?.users ?? 0, revenue_usd: money(row?.revenue ?? 0) });
    }
    const read = rows.reduce((sum, row) => sum + row.queries, 0);
    // The buckets come oldest first: the first holds the oldest row read.
    const oldest = rows[0]?.oldest ?? null;
    return { ...answer, coverage: coverage({ rows: read, oldest }, MAX_USAGE_ROWS, scope.from), bucket, buckets };
  }

  async topUsers(tenant: Tenant, request: AnalyticsRequest & { skip?: number; limit?: number }) {
    const { scope, answer } = await this.range(tenant, request);
    const skip = request.skip ?? 0;
    const limit = request.limit ?? DEFAULT_TOP_USERS;
    const rows = await this.repository.topUsers(scope, MAX_USAGE_ROWS, skip, limit);
    const read = await this.repository.userCount(scope, MAX_USAGE_ROWS);
    return {
      ...answer,
      coverage: coverage(read, MAX_USAGE_ROWS, scope.from),
      items: rows.map((row) => ({
        sender_email: row.senderEmail,
        queries: row.queries,
        errors: row.errors,
        revenue_usd: money(row.revenue),
        last_query_at: row.lastQueryAt,
      })),
      total: read.users,
      skip,
      limit,
    };
  }

  /**
   * The word cloud: the most frequent terms of the questions asked. The owner's alone (issue 27: "no raw
   * questions shown to anyone but the owner"; terms are what is left of them), a member's token is a 403.
   * Terms are kept by the hour, so the range starts at the start of `from`'s hour.
   */
  async terms(principal: Principal, request: AnalyticsRequest & { limit?: number }) {
    await this.owners.requireOwner(principal, principal.tenant, 'sees the terms of the questions asked (members see the other analytics)');
    const { scope, answer } = await this.range(principal.tenant, request);
    const hourly = { ...scope, from: hourOf(new Date(scope.from)) };
    const limit = request.limit ?? DEFAULT_TERMS;
    const found = await this.repository.terms(hourly, MAX_TERM_ROWS, limit);
    return { ...answer, coverage: coverage(found.coverage, MAX_TERM_ROWS, hourly.from), terms: found.terms, limit };
  }

  /** The range and filters asked for, checked: 422 for a reversed or too long range or both filters, 404 for another tenant's resource. */
  private async range(tenant: Tenant, request: AnalyticsRequest, maxSpanDays = MAX_SPAN_DAYS): Promise<Range> {
    const to = request.to ? new Date(request.to) : this.clock();
    const from = request.from ? new Date(request.from) : new Date(to.getTime() - DEFAULT_SPAN_MS);
    if (from.getTime() >= to.getTime()) throw issue('from', 'must be before `to`');
    if (to.getTime() - from.getTime() > maxSpanDays * DAY_MS) {
      throw issue(
        'from',
        maxSpanDays === MAX_SPAN_DAYS
          ? `the range is longer than ${MAX_SPAN_DAYS} days: narrow it`
          : `by hour the range may be ${MAX_HOURLY_SPAN_DAYS} days at most: narrow it or count by day`,
      );
    }
    if (request.endpoint_id !== undefined && request.dataset_id !== undefined) {
      throw issue('dataset_id', 'filter by an endpoint or by a dataset, not both');
    }
    if (request.endpoint_id !== undefined && !(await this.repository.ownsEndpoint(tenant.id, request.endpoint_id))) {
      throw new NotFoundError(`Endpoint '${request.endpoint_id}' not found`);
    }
    if (request.dataset_id !== undefined && !(await this.repository.ownsDataset(tenant.id, request.dataset_id))) {
      throw new NotFoundError(`Dataset '${request.dataset_id}' not found`);
    }
    const scope: Scope = {
      tenantId: tenant.id,
      from: from.toISOString(),
      to: to.toISOString(),
      includePlayground: request.include_playground ?? true,
      ...(request.endpoint_id !== undefined ? { endpointId: request.endpoint_id } : {}),
      ...(request.dataset_id !== undefined ? { datasetId: request.dataset_id } : {}),
    };
    return {
      scope,
      answer: { from: scope.from, to: scope.to, endpoint_id: request.endpoint_id ?? null, dataset_id: request.dataset_id ?? null },
    };
  }
}

function issue(field: string, msg: string): ValidationError {
  return new ValidationError([{ loc: ['query', field], msg, type: 'value_error' }]);
}

function coverage(read: Coverage, rowLimit: number, from: string) {
  const capped = read.rows >= rowLimit;
  return { rows: read.rows, row_limit: rowLimit, capped, counted_from: capped && read.oldest ? read.oldest : from };
}

/** A bucket's key (`2026-11-26T11` or `2026-11-26`) as the ISO time it starts at. */
function startOf(key: string, bucket: Bucket): string {
  return bucket === 'hour' ? `${key}:00:00.000Z` : `${key}T00:00:00.000Z`;
}

/** Sums of float amounts, without their rounding noise (1e-9 USD). */
function money(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}
