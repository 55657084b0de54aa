import { Type } from 'typebox';
import { PageQuery } from '../http/pagination.ts';
import { Configuration, Name, Timestamp, Uuid } from '../http/schemas.ts';
import { POLICY_TYPES } from './configuration-schema.ts';

export const CreatePolicyBody = Type.Object({
  name: Name,
  policy_type: Type.Enum([...POLICY_TYPES]),
  configuration: Configuration,
  endpoint_id: Uuid,
});

export const UpdatePolicyBody = Type.Object({
  name: Type.Optional(Name),
  configuration: Type.Optional(Configuration),
});

export const PolicyListQuery = Type.Object({ ...PageQuery.properties, endpoint_id: Type.Optional(Uuid) });

export const PolicyView = Type.Object({
  id: Uuid,
  name: Type.String(),
  policy_type: Type.Enum([...POLICY_TYPES]),
  configuration: Configuration,
  endpoint_id: Uuid,
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** Items of `GET /policies/`: the specification lists them without configuration. */
export const PolicySummary = Type.Object({
  id: Uuid,
  name: Type.String(),
  policy_type: Type.Enum([...POLICY_TYPES]),
  endpoint_id: Uuid,
  created_at: Timestamp,
});

/** The policy as embedded in endpoint detail (specification, Embedded views). */
export const EmbeddedPolicyView = Type.Object({
  id: Uuid,
  name: Type.String(),
  policy_type: Type.Enum([...POLICY_TYPES]),
  configuration: Configuration,
});

export const AccessCheckView = Type.Object({
  allowed: Type.Boolean(),
  /** The first pattern the e-mail matched, or null. */
  matched_pattern: Type.Union([Type.String(), Type.Null()]),
});
