import { createRemoteJWKSet, decodeJwt, type JWTPayload, jwtVerify } from 'jose';
import type { SatelliteIdentity, SatelliteVerifier } from '../auth/principal.ts';
import { HttpError, ServiceUnavailableError } from '../http/errors.ts';
import { ExpiringCache } from './expiring-cache.ts';
import type { HubClients, StoredMarketplace } from './hub-client.ts';

/** A marketplace that may vouch for satellite tokens, with the tenant it belongs to. */
export interface VerifyingMarketplace extends StoredMarketplace {
  tenant_id: string;
}

export interface SatelliteVerifierDeps {
  hubs: HubClients;
  /** Active marketplaces whose hub username is `username` (case-insensitive): of one tenant, or of every tenant. */
  marketplacesForAudience(username: string, tenantId: string | undefined): Promise<VerifyingMarketplace[]>;
  /** The active default marketplace of a tenant; without a tenant id, of the `default` tenant. */
  defaultMarketplace(tenantId: string | undefined): Promise<VerifyingMarketplace | undefined>;
  /** How soon an unknown `kid` may fetch the key set again (jose's cooldown; 30 s by default). */
  jwksCooldownMs?: number;
}

const OPAQUE_TOKEN = /^sat_(live|test)_/;
/** The hub's key set is kept for up to an hour (API-CONTRACT 9). */
const JWKS_MAX_AGE_MS = 3_600_000;
const JWKS_TIMEOUT_MS = 10_000;
/** Opaque tokens carry no expiry of their own: their answer is kept briefly. */
const OPAQUE_CACHE_MS = 60_000;

/** jose errors that mean "this token is not good", as opposed to "the hub's keys could not be had". */
const TOKEN_PROBLEMS = new Set([
  'ERR_JWT_CLAIM_VALIDATION_FAILED',
  'ERR_JWT_EXPIRED',
  'ERR_JWT_INVALID',
  'ERR_JWS_INVALID',
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
  'ERR_JOSE_ALG_NOT_ALLOWED',
  'ERR_JOSE_NOT_SUPPORTED',
]);

/**
 * Satellite tokens (API-CONTRACT 9). A JWT is checked locally first (RS256 signature with the hub's
 * key set, expiry, audience = the marketplace's hub username), so a bad token costs the hub nothing;
 * then the hub's /verify names the caller's e-mail, and that answer is kept until the token expires.
 * Opaque `sat_live_`/`sat_test_` tokens can only be judged by /verify.
 *
 * The marketplace that vouches for a token also fixes the tenant it may query: a token is never
 * checked by one tenant's marketplace and then used against another tenant.
 */
export class HubSatelliteVerifier implements SatelliteVerifier {
  private readonly keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  private readonly verified = new ExpiringCache<SatelliteIdentity>();
  /** Verifications under way: concurrent queries with one new token ask the hub once. */
  private readonly pending = new Map<string, Promise<SatelliteIdentity | null>>();

  constructor(private readonly deps: SatelliteVerifierDeps) {}

  verify(token: string, context: { tenantId?: string } = {}): Promise<SatelliteIdentity | null> {
    const key = `${context.tenantId ?? ''}:${token}`;
    let pending = this.pending.get(key);
    if (!pending) {
      pending = this.verifyNow(token, context.tenantId).finally(() => this.pending.delete(key));
      this.pending.set(key, pending);
    }
    return pending;
  }

  private async verifyNow(token: string, tenantId: string | undefined): Promise<SatelliteIdentity | null> {
    if (OPAQUE_TOKEN.test(token)) return this.verifyOpaque(token, tenantId);
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      return null;
    }
    // An expired token is refused without asking anyone.
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= Date.now()) return null;
    const audiences = (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).filter((aud): aud is string => typeof aud === 'string');

    const candidates: VerifyingMarketplace[] = [];
    for (const audience of new Set(audiences.map((aud) => aud.toLowerCase()))) {
      candidates.push(...(await this.deps.marketplacesForAudience(audience, tenantId)));
    }
    // No marketplace account is named like the audience (e.g. it was entered as an e-mail): the default
    // marketplace may still vouch, and the hub's /verify checks the audience against its account.
    const byAudience = candidates.length > 0;
    if (!byAudience) {
      const fallback = await this.deps.defaultMarketplace(tenantId);
      if (fallback) candidates.push(fallback);
    }

    let unavailable: ServiceUnavailableError | undefined;
    for (const marketplace of candidates) {
      const key = `${marketplace.id}:${token}`;
      const known = this.verified.get(key);
      if (known) return known;
      try {
        await jwtVerify(token, this.keySet(marketplace.url), {
          algorithms: ['RS256'],
          requiredClaims: ['exp'],
          ...(byAudience ? { audience: marketplace.username.toLowerCase() } : {}),
        });
      } catch (error) {
        if (isTokenProblem(error)) continue;
        unavailable ??= new ServiceUnavailableError(
          `Marketplace '${marketplace.name}' cannot be asked for its signing keys: ${error instanceof Error ? error.message : String(error)}`,
        );
        continue;
      }
      const identity = await this.ask(marketplace, token, audiences[0]);
      if (identity) this.verified.set(key, identity, claims.exp * 1000);
      return identity;
    }
    if (unavailable) throw unavailable;
    return null;
  }

  private async verifyOpaque(token: string, tenantId: string | undefined): Promise<SatelliteIdentity | null> {
    const marketplace = await this.deps.defaultMarketplace(tenantId);
    if (!marketplace) return null;
    const key = `${marketplace.id}:${token}`;
    const known = this.verified.get(key);
    if (known) return known;
    const identity = await this.ask(marketplace, token, marketplace.username.toLowerCase());
    if (identity) this.verified.set(key, identity, Date.now() + OPAQUE_CACHE_MS);
    return identity;
  }

  /** The hub's word on the token; any failure to get it is a 503 (the caller may retry), never a 401. */
  private async ask(marketplace: VerifyingMarketplace, token: string, audience: string | undefined): Promise<SatelliteIdentity | null> {
    let answer;
    try {
      answer = await this.deps.hubs.client(marketplace).verify(token);
    } catch (error) {
      if (error instanceof HttpError) throw new ServiceUnavailableError(error.detail);
      throw error;
    }
    if (!answer.valid) return null;
    return { email: answer.email, ...(audience ? { audience } : {}), tenantId: marketplace.tenant_id };
  }

  private keySet(hubUrl: string): ReturnType<typeof createRemoteJWKSet> {
    let keys = this.keySets.get(hubUrl);
    if (!keys) {
      keys = createRemoteJWKSet(new URL(`${hubUrl}/.well-known/jwks.json`), {
        cacheMaxAge: JWKS_MAX_AGE_MS,
        timeoutDuration: JWKS_TIMEOUT_MS,
        ...(this.deps.jwksCooldownMs !== undefined ? { cooldownDuration: this.deps.jwksCooldownMs } : {}),
      });
      this.keySets.set(hubUrl, keys);
    }
    return keys;
  }
}

function isTokenProblem(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TOKEN_PROBLEMS.has(code);
}
