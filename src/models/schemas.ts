import { Type } from 'typebox';
import { MODEL_TEST_MAX_TOKENS, MODEL_TEST_MAX_TOKENS_MAX, MODEL_TEST_PROMPT } from '../http/field-bounds.ts';
import { Configuration, Name, Timestamp, Uuid } from '../http/schemas.ts';
import { MODEL_DTYPES } from '../llm/model-schemas.ts';

export const CreateModelBody = Type.Object({
  name: Name,
  dtype: Type.Enum([...MODEL_DTYPES]),
  configuration: Configuration,
});

export const UpdateModelBody = Type.Object({
  name: Type.Optional(Name),
  configuration: Type.Optional(Configuration),
});

export const ModelView = Type.Object({
  id: Uuid,
  name: Type.String(),
  dtype: Type.String(),
  configuration: Configuration,
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** The model as embedded in endpoint views (specification, Embedded views). */
export const EmbeddedModelView = Type.Object({
  id: Uuid,
  name: Type.String(),
  dtype: Type.String(),
  configuration: Configuration,
});

export const ModelHealthView = Type.Object({
  healthy: Type.Boolean(),
  message: Type.String(),
});

export const ModelTestBody = Type.Object({
  prompt: Type.String({ minLength: 1, maxLength: 2000, default: MODEL_TEST_PROMPT }),
  max_tokens: Type.Integer({ minimum: 1, maximum: MODEL_TEST_MAX_TOKENS_MAX, default: MODEL_TEST_MAX_TOKENS }),
});

/** The `summary` object of a query answer (specification, Query response); also what /models/{id}/test answers. */
const Usage = Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() });

export const SummaryView = Type.Object({
  id: Type.String(),
  model: Type.String(),
  message: Type.Object({ role: Type.String(), content: Type.String(), tokens: Type.Integer() }),
  finish_reason: Type.String(),
  usage: Usage,
  cost: Type.Number(),
  provider_info: Type.Record(Type.String(), Type.Unknown()),
});

export const DiscoverView = Type.Object({
  base_url: Type.String(),
  reachable: Type.Boolean(),
  models: Type.Array(Type.Object({ id: Type.String(), owned_by: Type.Union([Type.String(), Type.Null()]) })),
  error: Type.Union([Type.String(), Type.Null()]),
});
