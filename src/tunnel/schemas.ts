import { Type } from 'typebox';

/** What `/settings/proxy` answers: the tenant's tunnel (the console reads it as its type). */
export const TunnelView = Type.Object({
  connected: Type.Boolean(),
  public_url: Type.Union([Type.String(), Type.Null()]),
  has_token: Type.Boolean(),
  state: Type.Enum(['stopped', 'online', 'reconnecting']),
  retry_in_seconds: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});
