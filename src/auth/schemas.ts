import { Type } from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, TENANT_NAME_PATTERN } from '../http/field-bounds.ts';
import { Timestamp, Uuid } from '../http/schemas.ts';

const Email = Type.String({ format: 'email', maxLength: 254 });

export const RegisterBody = Type.Object({
  email: Email,
  password: Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH }),
  tenant_name: Type.String({
    pattern: TENANT_NAME_PATTERN,
    errorMessage: 'Use up to 64 letters, digits, dots, hyphens or underscores, starting with a letter or a digit',
  }),
});

export const RegisteredUser = Type.Object({
  id: Uuid,
  email: Type.String(),
  tenant_name: Type.String(),
  created_at: Timestamp,
});

/** JSON `{email, password}`, or the OAuth2 password form's `username`/`password`. */
export const LoginBody = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 254 })),
  username: Type.Optional(Type.String({ maxLength: 254 })),
  password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }),
});

export const AccessToken = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('bearer'),
  expires_in: Type.Integer(),
});

export const Me = Type.Object({
  email: Type.String(),
  tenant_name: Type.String(),
  created_at: Timestamp,
});

export const SetupView = Type.Object({
  /** False until the first user registers: the console then offers to create the owner's account. */
  has_users: Type.Boolean(),
  /** Whether this very client may register without the admin key (the rule of `POST /auth/register`). */
  registration_open: Type.Boolean(),
});
