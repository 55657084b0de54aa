import { Type } from 'typebox';
import { HttpUrl } from '../http/schemas.ts';

export const PublicUrlBody = Type.Object({
  public_url: HttpUrl,
});

export const PublicUrlView = Type.Object({
  public_url: Type.Union([Type.String(), Type.Null()]),
  /** Where it came from: `set` (this route, the console), `configured` (SVC_PUBLIC_URL), `detected` (the public IP), `tunnel`. */
  source: Type.Union([Type.Enum(['set', 'configured', 'detected', 'tunnel']), Type.Null()]),
});
