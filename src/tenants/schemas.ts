import { Type } from 'typebox';
import { Timestamp, Uuid } from '../http/schemas.ts';

export const TenantParams = Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' }) });

export const AddMemberBody = Type.Object({ email: Type.String({ format: 'email', maxLength: 254 }) });

export const MemberView = Type.Object({
  user_id: Uuid,
  email: Type.String(),
  tenant_name: Type.String(),
  role: Type.Enum(['owner', 'member']),
  created_at: Timestamp,
});
