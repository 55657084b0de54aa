import { type TSchema, Type } from 'typebox';
import { Timestamp, Uuid } from '../http/schemas.ts';

/**
 * GET /api/v1/analytics/...: the tenant's queries over a range, of every endpoint or of one (`endpoint_id`)
 * or of the endpoints serving one dataset (`dataset_id`). Responses are declared whole, so nothing
 * undeclared (a question) can leave.
 */

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const RangeFields = {
  from: Type.Optional({ ...Timestamp, description: 'ISO 8601; default: 30 days before `to`; at most 366 days before it' }),
  to: Type.Optional({ ...Timestamp, description: 'ISO 8601, exclusive; default: now' }),
  endpoint_id: Type.Optional({ ...Uuid, description: "one of the tenant's endpoints (not with dataset_id)" }),
  dataset_id: Type.Optional({
    ...Uuid,
    description: 'the endpoints that serve this dataset now (not with endpoint_id)',
  }),
  include_playground: Type.Optional(Type.Boolean({ description: "the owner's questions from the console's playground (default true)" })),
};

export const AnalyticsQuery = Type.Object(RangeFields);
export const SeriesQuery = Type.Object({
  ...RangeFields,
  bucket: Type.Optional(Type.Enum(['hour', 'day'], { description: 'day (default) or hour, in UTC; by hour at most 31 days' })),
});
export const TopUsersQuery = Type.Object({
  ...RangeFields,
  skip: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 10' })),
});
export const TermsQuery = Type.Object({
  ...RangeFields,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'the most frequent terms, default 60' })),
});

/** What the counts read: rows are counted newest first up to a cap, so a busy range may be counted from later than `from`. */
const CoverageView = Type.Object({
  /** Rows read (usage rows; for terms, term rows). */
  rows: Type.Integer(),
  /** The most rows one answer reads. */
  row_limit: Type.Integer(),
  /** The cap was reached: the rows before `counted_from` were not counted. */
  capped: Type.Boolean(),
  /** `from`, or when capped the time of the oldest row counted. */
  counted_from: Type.String(),
});

const RangeView = {
  from: Type.String(),
  to: Type.String(),
  endpoint_id: Nullable(Type.String()),
  dataset_id: Nullable(Type.String()),
  coverage: CoverageView,
};

export const AnalyticsSummaryView = Type.Object({
  ...RangeView,
  queries: Type.Integer(),
  /** Distinct callers (sender e-mails). */
  users: Type.Integer(),
  /** MPP payments collected, in USD (a payment that failed on chain afterwards is left out). */
  revenue_usd: Type.Number(),
  errors: Type.Integer(),
  refused: Type.Integer(),
  /** Of the queries that have a duration (null when none). */
  average_latency_ms: Nullable(Type.Integer()),
});

export const AnalyticsSeriesView = Type.Object({
  ...RangeView,
  bucket: Type.Enum(['hour', 'day']),
  /** Every bucket of the range, oldest first, empty ones included. */
  buckets: Type.Array(Type.Object({ start: Type.String(), queries: Type.Integer(), users: Type.Integer(), revenue_usd: Type.Number() })),
});

export const TopUsersView = Type.Object({
  ...RangeView,
  items: Type.Array(
    Type.Object({
      sender_email: Type.String(),
      queries: Type.Integer(),
      errors: Type.Integer(),
      revenue_usd: Type.Number(),
      last_query_at: Type.String(),
    }),
  ),
  /** Distinct users among the rows read. */
  total: Type.Integer(),
  skip: Type.Integer(),
  limit: Type.Integer(),
});

export const TermsView = Type.Object({
  ...RangeView,
  /** Most frequent first: how many questions of the range held each term. Never a question. */
  terms: Type.Array(Type.Object({ term: Type.String(), count: Type.Integer() })),
  limit: Type.Integer(),
});
