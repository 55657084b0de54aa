import { Type } from 'typebox';
import { Configuration, Name, Timestamp, Uuid } from '../http/schemas.ts';
import { MODEL_DTYPES } from './configuration.ts';

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
  prompt: Type.String({ minLength: 1, maxLength: 2000, default: 'Say hello in one short sentence.' }),
  max_tokens: Type.Integer({ minimum: 1, maximum: 256, default: 32 }),
});
