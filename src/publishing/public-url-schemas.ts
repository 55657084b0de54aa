import { Type } from 'typebox';
import { HttpUrl } from '../http/schemas.ts';

export const PublicUrlBody = Type.Object({
  public_url: HttpUrl,
});

export const PublicUrlView = Type.Object({
  public_url: Type.Union([Type.String(), Type.Null()]),
});
