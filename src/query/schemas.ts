import { Type } from 'typebox';
import { ReferencesView } from '../datasets/schemas.ts';
import { SummaryView } from '../models/schemas.ts';

export const ChatMessageSchema = Type.Object({
  role: Type.Enum(['user', 'assistant', 'system']),
  content: Type.String({ maxLength: 100_000 }),
});

/** The query request of the specification, with its defaults and ranges (422 outside them). */
export const QueryBody = Type.Object({
  messages: Type.Union([Type.String({ minLength: 1, maxLength: 100_000 }), Type.Array(ChatMessageSchema, { minItems: 1, maxItems: 200 })]),
  similarity_threshold: Type.Number({ minimum: 0, maximum: 1, default: 0.5 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 5 }),
  include_metadata: Type.Boolean({ default: true }),
  max_tokens: Type.Integer({ minimum: 1, maximum: 32_768, default: 100 }),
  temperature: Type.Number({ minimum: 0, maximum: 2, default: 0.7 }),
  stop_sequences: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 16, default: ['\n'] }),
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

export const QueryResponse = Type.Object({
  summary: Type.Union([SummaryView, Type.Null()]),
  references: Type.Optional(ReferencesView),
});

export const UsageRecordView = Type.Object({
  sender_email: Type.String(),
  dataset_cost: Type.Number(),
  model_cost: Type.Number(),
  total_cost: Type.Number(),
  tokens: Type.Integer(),
  status: Type.String(),
  created_at: Type.String(),
});
