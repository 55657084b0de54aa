import { Type } from 'typebox';
import { Name, ServiceUrl, Timestamp, Uuid } from '../http/schemas.ts';

const Username = Type.String({ minLength: 1, maxLength: 254 });
const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 1, maxLength: 1000 });

export const CreateMarketplaceBody = Type.Object({
  name: Name,
  url: ServiceUrl,
  username: Username,
  email: Type.Optional(Type.Union([Email, Type.Null()])),
  password: Password,
  is_default: Type.Optional(Type.Boolean()),
  is_active: Type.Optional(Type.Boolean()),
  accounting_url: Type.Optional(Type.Union([ServiceUrl, Type.Null()])),
  accounting_email: Type.Optional(Type.Union([Email, Type.Null()])),
  accounting_password: Type.Optional(Type.Union([Password, Type.Null()])),
});

export const UpdateMarketplaceBody = Type.Partial(CreateMarketplaceBody);

/** Passwords are never part of a response. */
export const MarketplaceView = Type.Object({
  id: Uuid,
  name: Type.String(),
  url: Type.String(),
  username: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  is_default: Type.Boolean(),
  is_active: Type.Boolean(),
  accounting_url: Type.Union([Type.String(), Type.Null()]),
  accounting_email: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});
