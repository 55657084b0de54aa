import { jwtVerify, SignJWT } from 'jose';
import { type Clock, systemClock } from '../util/clock.ts';

/** Lifetime of a local JWT, fixed by the specification. */
export const ACCESS_TOKEN_SECONDS = 3600;

export interface AccessClaims {
  sub: string;
  email: string;
  tenant_name: string;
}

/**
 * Issues and checks local HS256 JWTs (claims sub, email, tenant_name, iat, exp). Both stamp and check on the
 * `clock` (jose reads the system's time unless given one), so a test's clock decides when a token expires.
 */
export class TokenIssuer {
  private readonly key: Uint8Array;

  constructor(
    secret: string | Uint8Array,
    private readonly clock: Clock = systemClock,
  ) {
    this.key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  }

  async issue(claims: AccessClaims): Promise<string> {
    const issuedAt = Math.floor(this.clock.now() / 1000);
    return new SignJWT({ email: claims.email, tenant_name: claims.tenant_name })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + ACCESS_TOKEN_SECONDS)
      .sign(this.key);
  }

  /** The claims of a valid, unexpired token; null for anything else. */
  async verify(token: string): Promise<AccessClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        requiredClaims: ['sub', 'exp', 'iat'],
        currentDate: new Date(this.clock.now()),
      });
      if (typeof payload.email !== 'string' || typeof payload.tenant_name !== 'string' || !payload.sub) return null;
      return { sub: payload.sub, email: payload.email, tenant_name: payload.tenant_name };
    } catch {
      return null;
    }
  }
}
