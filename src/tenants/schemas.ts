import { Type } from 'typebox';
import { TENANT_NAME_PATTERN } from '../http/field-bounds.ts';
import { Timestamp, Uuid } from '../http/schemas.ts';

export const TenantParams = Type.Object({ name: Type.String({ pattern: TENANT_NAME_PATTERN }) });

export const AddMemberBody = Type.Object({ email: Type.String({ format: 'email', maxLength: 254 }) });

export const MemberParams = Type.Object({ ...TenantParams.properties, email: Type.String({ format: 'email', maxLength: 254 }) });

export const MemberView = Type.Object({
  user_id: Uuid,
  email: Type.String(),
  tenant_name: Type.String(),
  role: Type.Enum(['owner', 'member']),
  created_at: Timestamp,
});

/** The folders the operator grants a tenant (API-CONTRACT 3): absolute paths of existing folders. */
export const UpdateTenantBody = Type.Object({
  ingestion_roots: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { maxItems: 100 }),
});

export const TenantView = Type.Object({
  name: Type.String(),
  /** Every folder the tenant may index: what the operator granted, and SVC_INGESTION_ROOTS for its first owner. */
  ingestion_roots: Type.Array(Type.String()),
  created_at: Timestamp,
});
