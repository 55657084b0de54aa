import { Type } from 'typebox';

export const PublicUrlBody = Type.Object({
  public_url: Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2000 }),
});

export const PublicUrlView = Type.Object({
  public_url: Type.Union([Type.String(), Type.Null()]),
});
