import { NotFoundError, ValidationError } from '../domain/errors.ts';
import type { Principal, Tenant } from '../domain/principal.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import { hourOf, questionTerms } from './question-terms.ts';
import type { AnalyticsRepository, CallerPart, Scope } from './repository.ts';
import { type Reading, readSliced } from './sliced-reading.ts';

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
const MAX_SPAN_DAYS = 366;
/** By hour, a month at most (744 buckets: what a chart can still show). */
const MAX_HOURLY_SPAN_DAYS = 31;
/**
 * The most usage rows one answer reads, newest first (the answer says from when it counted when the range
 * holds more), and how many one statement reads: a slice of 2,500 holds the event loop for a few
 * milliseconds on SQLite (test/analytics-scale.test.ts measures the whole and the longest pause).
 */
export const MAX_USAGE_ROWS = 100_000;
/** The most term rows the word cloud reads (about 10,000 questions of a few words each). */
export const MAX_TERM_ROWS = 50_000;
const SLICE_ROWS = 2_500;
const DEFAULT_TOP_USERS = 10;
const DEFAULT_TERMS = 60;

export interface ReadLimits {
  sliceRows: number;
  maxUsageRows: number;
  maxTermRows: number;
}

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
    private readonly clock: Clock = systemClock,
    /** The caps and the slice size (tests make them small to read a few rows in several slices). */
    private readonly reads: ReadLimits = { sliceRows: SLICE_ROWS, maxUsageRows: MAX_USAGE_ROWS, maxTermRows: MAX_TERM_ROWS },
  ) {}

  /** A recorded question's terms are kept (never the question): one short insert; a failure is logged by the query, never its answer's. */
  async questionAsked(asked: AskedQuestion): Promise<void> {
    await this.repository.recordTerms(
      { tenantId: asked.tenantId, endpointId: asked.endpointId, origin: asked.origin, askedHour: hourOf(asked.at) },
      questionTerms(asked.question),
    );
  }

  async summary(tenant: Tenant, request: AnalyticsRequest) {
    const { scope, answer } = await this.range(tenant, request);
    const callers = await this.byCaller(scope);
    const totals = { queries: 0, revenue: 0, errors: 0, refused: 0, latencySum: 0, latencyCount: 0 };
    for (const caller of callers.parts.values()) {
      totals.queries += caller.queries;
      totals.revenue += caller.revenue;
      totals.errors += caller.errors;
      totals.refused += caller.refused;
      totals.latencySum += caller.latencySum;
      totals.latencyCount += caller.latencyCount;
    }
    return {
      ...answer,
      coverage: coverage(callers.reading, this.reads.maxUsageRows, scope.from),
      queries: totals.queries,
      users: [...callers.parts.keys()].filter(isUser).length,
      revenue_usd: money(totals.revenue),
      errors: totals.errors,
      refused: totals.refused,
      average_latency_ms: totals.latencyCount > 0 ? Math.round(totals.latencySum / totals.latencyCount) : null,
    };
  }

  async series(tenant: Tenant, request: AnalyticsRequest & { bucket?: Bucket }) {
    const bucket = request.bucket ?? 'day';
    const { scope, answer } = await this.range(tenant, request, bucket === 'hour' ? MAX_HOURLY_SPAN_DAYS : MAX_SPAN_DAYS);
    const byStart = new Map<string, { queries: number; revenue: number; users: Set<string> }>();
    const reading = await readSliced(
      {
        boundary: (upper, rows) => this.repository.usageBoundary(scope, upper, rows),
        read: async (window) => {
          let read = 0;
          for (const part of await this.repository.usageByBucket(scope, window, bucket)) {
            const start = startOf(part.bucket, bucket);
            const figures = byStart.get(start) ?? { queries: 0, revenue: 0, users: new Set<string>() };
            figures.queries += part.queries;
            figures.revenue += part.revenue;
            if (isUser(part.senderEmail)) figures.users.add(part.senderEmail);
            byStart.set(start, figures);
            read += part.queries;
          }
          return read;
        },
      },
      this.reads.sliceRows,
      this.reads.maxUsageRows,
    );
    const size = BUCKET_MS[bucket];
    const buckets = [];
    for (let start = Math.floor(Date.parse(scope.from) / size) * size; start < Date.parse(scope.to); start += size) {
      const figures = byStart.get(new Date(start).toISOString());
      buckets.push({
        start: new Date(start).toISOString(),
        queries: figures?.queries ?? 0,
        users: figures?.users.size ?? 0,
        revenue_usd: money(figures?.revenue ?? 0),
      });
    }
    return { ...answer, coverage: coverage(reading, this.reads.maxUsageRows, scope.from), bucket, buckets };
  }

  async topUsers(tenant: Tenant, request: AnalyticsRequest & { skip?: number; limit?: number }) {
    const { scope, answer } = await this.range(tenant, request);
    const skip = request.skip ?? 0;
    const limit = request.limit ?? DEFAULT_TOP_USERS;
    const callers = await this.byCaller(scope);
    const users = [...callers.parts.values()]
      .filter((caller) => isUser(caller.senderEmail))
      .sort((a, b) => b.queries - a.queries || b.revenue - a.revenue || compare(a.senderEmail, b.senderEmail));
    return {
      ...answer,
      coverage: coverage(callers.reading, this.reads.maxUsageRows, scope.from),
      items: users.slice(skip, skip + limit).map((caller) => ({
        sender_email: caller.senderEmail,
        queries: caller.queries,
        errors: caller.errors,
        revenue_usd: money(caller.revenue),
        last_query_at: caller.lastQueryAt,
      })),
      total: users.length,
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
    const counts = new Map<string, number>();
    const reading = await readSliced(
      {
        boundary: (upper, rows) => this.repository.termsBoundary(hourly, upper, rows),
        read: async (window) => {
          let read = 0;
          for (const part of await this.repository.termCounts(hourly, window)) {
            counts.set(part.term, (counts.get(part.term) ?? 0) + part.count);
            read += part.count;
          }
          return read;
        },
      },
      this.reads.sliceRows,
      this.reads.maxTermRows,
    );
    const terms = [...counts.entries()]
      .sort(([a, countA], [b, countB]) => countB - countA || compare(a, b))
      .slice(0, limit)
      .map(([term, count]) => ({ term, count }));
    return { ...answer, coverage: coverage(reading, this.reads.maxTermRows, hourly.from), terms, limit };
  }

  /** The range's usage rows added up per caller (the summary's and the top users' figures). */
  private async byCaller(scope: Scope): Promise<{ parts: Map<string, CallerPart>; reading: Reading }> {
    const parts = new Map<string, CallerPart>();
    const reading = await readSliced(
      {
        boundary: (upper, rows) => this.repository.usageBoundary(scope, upper, rows),
        read: async (window) => {
          let read = 0;
          for (const part of await this.repository.usageByCaller(scope, window)) {
            const known = parts.get(part.senderEmail);
            parts.set(
              part.senderEmail,
              known
                ? {
                    senderEmail: part.senderEmail,
                    queries: known.queries + part.queries,
                    errors: known.errors + part.errors,
                    refused: known.refused + part.refused,
                    revenue: known.revenue + part.revenue,
                    latencySum: known.latencySum + part.latencySum,
                    latencyCount: known.latencyCount + part.latencyCount,
                    // Slices come newest first: the caller's first one holds its last query.
                    lastQueryAt: known.lastQueryAt,
                  }
                : part,
            );
            read += part.queries;
          }
          return read;
        },
      },
      this.reads.sliceRows,
      this.reads.maxUsageRows,
    );
    return { parts, reading };
  }

  /** The range and filters asked for, checked: 422 for a reversed or too long range or both filters, 404 for another tenant's resource. */
  private async range(tenant: Tenant, request: AnalyticsRequest, maxSpanDays = MAX_SPAN_DAYS): Promise<Range> {
    const to = request.to ? new Date(request.to) : new Date(this.clock.now());
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
    await this.checkFilters(tenant, request);
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

  /** One filter at most (422), and the endpoint or dataset it names is the tenant's (404 otherwise). */
  private async checkFilters(tenant: Tenant, request: AnalyticsRequest): Promise<void> {
    if (request.endpoint_id !== undefined && request.dataset_id !== undefined) {
      throw issue('dataset_id', 'filter by an endpoint or by a dataset, not both');
    }
    if (request.endpoint_id !== undefined && !(await this.repository.ownsEndpoint(tenant.id, request.endpoint_id))) {
      throw new NotFoundError(`Endpoint '${request.endpoint_id}' not found`);
    }
    if (request.dataset_id !== undefined && !(await this.repository.ownsDataset(tenant.id, request.dataset_id))) {
      throw new NotFoundError(`Dataset '${request.dataset_id}' not found`);
    }
  }
}

function issue(field: string, msg: string): ValidationError {
  return new ValidationError([{ loc: ['query', field], msg, type: 'value_error' }]);
}

function coverage(reading: Reading, rowLimit: number, from: string) {
  return { rows: reading.rows, row_limit: rowLimit, capped: reading.capped, counted_from: reading.oldest ?? from };
}

/** The admin key and every user have an e-mail; an empty one is nobody's. */
function isUser(senderEmail: string): boolean {
  return senderEmail !== '';
}

/** By code unit, as both databases order the e-mails and terms (C collation). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A bucket's key (`2026-11-26T11` or `2026-11-26`) as the ISO time it starts at. */
function startOf(key: string, bucket: Bucket): string {
  return bucket === 'hour' ? `${key}:00:00.000Z` : `${key}T00:00:00.000Z`;
}

/** Sums of float amounts, without their rounding noise (1e-9 USD). */
function money(amount: number): number {
  return Math.round(amount * 1e9) / 1e9;
}
