import { type Static, type TSchema, Type } from 'typebox';
import { ReferencesView } from '../datasets/schemas.ts';
import { MAX_TOKENS_MAX, QUERY_LIMIT_DEFAULT, QUERY_LIMIT_MAX, QUERY_THRESHOLD_DEFAULT, TEMPERATURE_MAX } from '../http/field-bounds.ts';
import { SummaryView } from '../models/schemas.ts';

const ChatMessageSchema = Type.Object({
  role: Type.Enum(['user', 'assistant', 'system']),
  content: Type.String({ maxLength: 100_000 }),
});

/** The query request of the specification, with its defaults and ranges (422 outside them). */
export const QueryBody = Type.Object({
  messages: Type.Union([Type.String({ minLength: 1, maxLength: 100_000 }), Type.Array(ChatMessageSchema, { minItems: 1, maxItems: 200 })]),
  similarity_threshold: Type.Number({ minimum: 0, maximum: 1, default: QUERY_THRESHOLD_DEFAULT }),
  limit: Type.Integer({ minimum: 1, maximum: QUERY_LIMIT_MAX, default: QUERY_LIMIT_DEFAULT }),
  include_metadata: Type.Boolean({ default: true }),
  // No schema defaults for these three: a query that omits one gets its endpoint's `generation_defaults`,
  // else the specification's default (query/generation.ts).
  max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOKENS_MAX })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: TEMPERATURE_MAX })),
  stop_sequences: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 16 })),
  stream: Type.Boolean({ default: false }),
  presence_penalty: Type.Number({ minimum: -2, maximum: 2, default: 0 }),
  frequency_penalty: Type.Number({ minimum: -2, maximum: 2, default: 0 }),
  extras: Type.Object(
    {
      reference_options: Type.Optional(Type.Object({ mode: Type.Optional(Type.Enum(['hybrid', 'vector', 'keyword'])) })),
      summarize_options: Type.Optional(
        Type.Object({
          top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 })),
          response_format: Type.Optional(Type.Object({ type: Type.Enum(['text', 'json_object', 'json_schema']) })),
        }),
      ),
    },
    { default: {} },
  ),
  transaction_token: Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()], { default: null }),
});

/** A query's body as the route validated it, defaults filled in. */
export type QueryRequest = Static<typeof QueryBody>;

/** The query's headers beside the credentials: an MPP payment credential (API-CONTRACT 10.3). */
export const QueryHeaders = Type.Object({
  'x-payment': Type.Optional(Type.String({ maxLength: 16_384, description: 'An MPP credential: `Payment <base64url>`' })),
  'x-knode-origin': Type.Optional(
    Type.Enum(['api', 'playground'], {
      description: '`playground`: the owner asks from the console; usage analytics can leave these out (ignored from others)',
    }),
  ),
});

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** One policy's part in an answer (API-CONTRACT 10.2). */
export const PolicyEntryView = Type.Object({
  policy_type: Type.String(),
  kind: Type.Enum(['payment', 'access', 'rate_limit', 'transform']),
  status: Type.Enum(['charged', 'pending', 'refunded', 'free', 'rejected', 'applied', 'skipped']),
  amount: Nullable(Type.Number()),
  currency: Nullable(Type.Literal('USD')),
  recipient: Nullable(
    Type.Object({ username: Nullable(Type.String()), email: Nullable(Type.String()), wallet_address: Nullable(Type.String()) }),
  ),
  transaction: Nullable(Type.Object({ rail: Type.Enum(['mpp', 'accounting']), id: Type.String(), reference: Type.Null() })),
  reason_code: Nullable(Type.Enum(['NO_PRICING_TIER', 'INSUFFICIENT_BALANCE', 'PAYMENT_REQUIRED', 'ACCESS_DENIED', 'RATE_LIMITED'])),
  reason: Nullable(Type.String()),
  details: Type.Record(Type.String(), Type.Unknown()),
});

const PolicyMetadataView = Type.Object({
  outcome: Type.Enum(['success', 'payment_required', 'policy_violation', 'access_denied', 'rate_limited']),
  entries: Type.Array(PolicyEntryView),
});

export const QueryResponse = Type.Object({
  summary: Type.Union([SummaryView, Type.Null()]),
  references: Type.Optional(ReferencesView),
  /** What today's SyftHub clients read (API-CONTRACT 10.2): the policies' part, the total cost and its currency. */
  policy_metadata: PolicyMetadataView,
  cost: Type.Number(),
  currency: Type.Literal('USD'),
});

export const UsageRecordView = Type.Object({
  sender_email: Type.String(),
  dataset_cost: Type.Number(),
  model_cost: Type.Number(),
  total_cost: Type.Number(),
  tokens: Type.Integer(),
  /** success, error, or refused (a payment policy turned the query down). */
  status: Type.String(),
  /** Why the query failed or was refused. */
  error: Nullable(Type.String()),
  /** What the query was charged, and how: null when nothing was. */
  payment: Nullable(
    Type.Object({
      rail: Type.Enum(['mpp', 'accounting']),
      amount: Nullable(Type.Number()),
      currency: Type.Literal('USD'),
      transaction: Type.String(),
    }),
  ),
  created_at: Type.String(),
});

export const UsageSummaryQuery = Type.Object({
  bucket: Type.Optional(Type.Enum(['hour', 'day'], { description: 'hour (default) or day, in UTC' })),
  from: Type.Optional(Type.String({ format: 'date-time', description: 'default: a day (hour) or 30 days (day) before `to`' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'exclusive; default: now' })),
  include_playground: Type.Optional(Type.Boolean({ description: "the owner's questions from the console's playground (default true)" })),
});

const UsageFiguresView = {
  queries: Type.Integer(),
  succeeded: Type.Integer(),
  failed: Type.Integer(),
  refused: Type.Integer(),
  refused_by: Type.Record(Type.String(), Type.Integer()),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  cost: Type.Number(),
  charged: Type.Number(),
  latency_ms: Type.Object({ p50: Nullable(Type.Number()), p95: Nullable(Type.Number()) }),
};

export const UsageSummaryView = Type.Object({
  bucket: Type.Enum(['hour', 'day']),
  from: Type.String(),
  to: Type.String(),
  totals: Type.Object(UsageFiguresView),
  buckets: Type.Array(Type.Object({ start: Type.String(), ...UsageFiguresView })),
  top_callers: Type.Array(
    Type.Object({ sender_email: Type.String(), queries: Type.Integer(), refused: Type.Integer(), cost: Type.Number() }),
  ),
});
