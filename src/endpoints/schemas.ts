import { Type } from 'typebox';
import { EmbeddedDatasetView } from '../datasets/schemas.ts';
import { MAX_TOKENS_MAX, SLUG_MAX_LENGTH, SLUG_MIN_LENGTH, TEMPERATURE_MAX } from '../http/field-bounds.ts';
import { PageQuery } from '../http/pagination.ts';
import { LongText, Name, ShortText, Timestamp, Uuid } from '../http/schemas.ts';
import { EmbeddedModelView } from '../models/schemas.ts';
import { EmbeddedPolicyView } from '../policies/schemas.ts';

const RESPONSE_TYPES = ['raw', 'summary', 'both'] as const;
const ResponseType = Type.Enum([...RESPONSE_TYPES]);

/** Lower-case letters, digits and single inner hyphens; upper case is accepted and lowered on create. */
const SLUG_PATTERN = '^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$';
const Slug = Type.String({
  minLength: SLUG_MIN_LENGTH,
  maxLength: SLUG_MAX_LENGTH,
  pattern: SLUG_PATTERN,
  errorMessage: 'Use letters, digits and single hyphens between them, e.g. my-papers (no spaces, no hyphen at either end)',
});
export const SlugParams = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 200 }) });

const Tags = Type.String({ maxLength: 2000 });

/**
 * What a query that omits these fields gets from this endpoint (API-CONTRACT 4), else the specification's
 * defaults. Same ranges as the query's own fields. The SyftHub SDK's model calls send no `stop_sequences`,
 * and the specification's default (one newline) cuts every answer to its first line: an endpoint can set `[]`.
 */
export const GenerationDefaults = Type.Object(
  {
    system_prompt: Type.Optional(Type.String({ maxLength: 10_000 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: TEMPERATURE_MAX })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOKENS_MAX })),
    stop_sequences: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 16 })),
  },
  { additionalProperties: false },
);

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
  generation_defaults: Type.Optional(GenerationDefaults),
});

export const UpdateEndpointBody = Type.Object({
  name: Type.Optional(Name),
  summary: Type.Optional(ShortText),
  description: Type.Optional(LongText),
  /** Replaces the endpoint's defaults as a whole (`{}` clears them). */
  generation_defaults: Type.Optional(GenerationDefaults),
});

const PublishedTo = Type.Array(Uuid);

/**
 * An archived endpoint (API-CONTRACT 4, "Archive") is off every marketplace and answers no query; it keeps its
 * policies and usage. `published` reads false while it is archived (the flag itself is kept for unarchiving).
 */
const Archived = Type.Boolean();
const ArchivedAt = Type.Union([Timestamp, Type.Null()]);

/** Archive and unarchive take nothing: no body, or an empty object (anything else in it is ignored, as elsewhere). */
export const ArchiveBody = Type.Object({});

/** `GET /endpoints/?archived=`: `false` (the default) lists the endpoints in use, `true` the archived ones, `all` both. */
export const EndpointListQuery = Type.Object({
  ...PageQuery.properties,
  archived: Type.Optional(Type.Enum(['true', 'false', 'all'])),
});

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
  generation_defaults: GenerationDefaults,
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
  generation_defaults: GenerationDefaults,
  archived: Archived,
  archived_at: ArchivedAt,
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
  generation_defaults: GenerationDefaults,
  archived: Archived,
  archived_at: ArchivedAt,
  /** While archived: the marketplaces it was published to, where unarchiving publishes it again; [] otherwise. */
  archived_from: PublishedTo,
  created_at: Timestamp,
  updated_at: Timestamp,
  model: Type.Union([EmbeddedModelView, Type.Null()]),
  dataset: Type.Union([EmbeddedDatasetView, Type.Null()]),
  policies: Type.Array(EmbeddedPolicyView),
});

export const TypeView = Type.Object({
  type: Type.String(),
  description: Type.String(),
  /** The JSON Schema the type's `configuration` is checked against, defaults included. */
  configuration_schema: Type.Record(Type.String(), Type.Unknown()),
});

export const TypesView = Type.Record(Type.String(), Type.Array(TypeView));
