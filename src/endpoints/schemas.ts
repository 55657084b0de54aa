import { Type } from 'typebox';
import { EmbeddedDatasetView } from '../datasets/schemas.ts';
import { LongText, Name, ShortText, Timestamp, Uuid } from '../http/schemas.ts';
import { EmbeddedModelView } from '../models/schemas.ts';
import { EmbeddedPolicyView } from '../policies/schemas.ts';

export const RESPONSE_TYPES = ['raw', 'summary', 'both'] as const;
export const ResponseType = Type.Enum([...RESPONSE_TYPES]);

/** Lower-case letters, digits and single inner hyphens; upper case is accepted and lowered on create. */
export const SLUG_PATTERN = '^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$';
export const Slug = Type.String({ minLength: 3, maxLength: 64, pattern: SLUG_PATTERN });
export const SlugParams = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 200 }) });

const Tags = Type.String({ maxLength: 2000 });

export const CreateEndpointBody = Type.Object({
  name: Name,
  slug: Slug,
  description: Type.Optional(LongText),
  summary: Type.Optional(ShortText),
  dataset_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
  model_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
  response_type: Type.Optional(ResponseType),
  published: Type.Optional(Type.Boolean()),
  tags: Type.Optional(Tags),
});

export const UpdateEndpointBody = Type.Object({
  name: Type.Optional(Name),
  summary: Type.Optional(ShortText),
  description: Type.Optional(LongText),
});

const PublishedTo = Type.Array(Uuid);

export const CreatedEndpointView = Type.Object({
  id: Uuid,
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  summary: Type.String(),
  response_type: ResponseType,
  published: Type.Boolean(),
  tags: Type.String(),
  model_id: Type.Union([Uuid, Type.Null()]),
  dataset_id: Type.Union([Uuid, Type.Null()]),
  published_to: PublishedTo,
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const EndpointListItem = Type.Object({
  id: Uuid,
  name: Type.String(),
  slug: Type.String(),
  summary: Type.String(),
  response_type: ResponseType,
  published: Type.Boolean(),
  tags: Type.String(),
  published_to: PublishedTo,
  created_at: Timestamp,
  model: Type.Union([EmbeddedModelView, Type.Null()]),
  dataset: Type.Union([EmbeddedDatasetView, Type.Null()]),
});

export const EndpointDetail = Type.Object({
  id: Uuid,
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  summary: Type.String(),
  response_type: ResponseType,
  published: Type.Boolean(),
  tags: Type.String(),
  published_to: PublishedTo,
  created_at: Timestamp,
  updated_at: Timestamp,
  model: Type.Union([EmbeddedModelView, Type.Null()]),
  dataset: Type.Union([EmbeddedDatasetView, Type.Null()]),
  policies: Type.Array(EmbeddedPolicyView),
});
