import { createRemoteJWKSet, decodeJwt, type JWTPayload, jwtVerify } from 'jose';
import type { Logger } from 'pino';
import { DomainError, errorMessage, MisdirectedRequestError, ServiceUnavailableError } from '../domain/errors.ts';
import type { SatelliteIdentity, SatelliteVerifier } from '../domain/principal.ts';
import type { Clock } from '../util/clock.ts';
import { ExpiringCache } from '../util/expiring-cache.ts';
import type { HubClients, StoredMarketplace } from './hub-client.ts';

/** A marketplace that may vouch for satellite tokens, with the tenant it belongs to. */
export interface VerifyingMarketplace extends StoredMarketplace {
  tenant_id: string;
  /** This knode's satellite at that hub (API-CONTRACT 9.1), null on a hub without the registry. */
  satellite_id: string | null;
}

/** The marketplace records a token may be checked with (marketplaces/repository.ts implements it). */
interface VerifyingMarketplaces {
  /**
   * Active marketplaces whose hub username or satellite id is one of `audiences` (case-insensitive), of
   * these tenants (all when undefined).
   */
  listActiveByAudiences(audiences: readonly string[], tenantIds?: readonly string[]): Promise<VerifyingMarketplace[]>;
  /** The active default marketplace of a tenant; without a tenant id, of the `default` tenant. */
  activeDefault(tenantId: string | undefined): Promise<VerifyingMarketplace | undefined>;
}

export interface SatelliteVerifierDeps {
  hubs: HubClients;
  marketplaces: VerifyingMarketplaces;
  /** Where a refused ambiguous token is reported (the operator should learn of a duplicate account). */
  log: Pick<Logger, 'warn'>;
  /** How soon an unknown `kid` may fetch the key set again (jose's cooldown; 30 s by default). */
  jwksCooldownMs?: number;
  /** Whether a token has expired, and how long a verification is kept. */
  clock: Clock;
}

const OPAQUE_TOKEN = /^sat_(live|test)_/;
/** The hub's key set is kept for up to an hour (API-CONTRACT 9). */
const JWKS_MAX_AGE_MS = 3_600_000;
const JWKS_TIMEOUT_MS = 10_000;
/** Opaque tokens carry no expiry of their own: their answer is kept briefly. */
const OPAQUE_CACHE_MS = 60_000;
/** The most verifications kept at once: a flood of distinct tokens cannot grow the cache past it. */
const VERIFIED_MAX = 10_000;

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
 * Satellite tokens (API-CONTRACT 6, 9 and 9.1). A JWT is checked locally first (RS256 signature with the
 * hub's key set, expiry, audience = this knode's satellite id at that hub, or, from a hub without the
 * registry, the marketplace's hub username), so a bad token costs the hub nothing; then the hub's /verify
 * names the caller's e-mail, and that answer is kept until the token expires. /verify is told our
 * satellite id (for a token naming it, and for an opaque one): the hub then refuses a token made for
 * another satellite of the same account, which would otherwise pass as "the account's".
 * Opaque `sat_live_`/`sat_test_` tokens can only be judged by /verify.
 *
 * The marketplace that vouches for a token also fixes the tenant it may query, and the token is only
 * ever sent to that tenant's marketplace. Another tenant can add a record with the same hub username and
 * a server of its own that republishes the hub's keys: such a token then verifies for both, and knode
 * refuses to choose (421) rather than take the oldest record, and never sends the token to either.
 */
export class HubSatelliteVerifier implements SatelliteVerifier {
  private readonly keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  private readonly verified: ExpiringCache<SatelliteIdentity>;
  /** Verifications under way: concurrent queries with one new token ask the hub once. */
  private readonly pending = new Map<string, Promise<SatelliteIdentity | null>>();

  constructor(private readonly deps: SatelliteVerifierDeps) {
    this.verified = new ExpiringCache(VERIFIED_MAX, () => deps.clock.now());
  }

  verify(token: string, tenantIds?: readonly string[]): Promise<SatelliteIdentity | null> {
    const key = `${tenantIds?.join(',') ?? '*'}:${token}`;
    let pending = this.pending.get(key);
    if (!pending) {
      pending = this.verifyNow(token, tenantIds).finally(() => this.pending.delete(key));
      this.pending.set(key, pending);
    }
    return pending;
  }

  private async verifyNow(token: string, tenantIds: readonly string[] | undefined): Promise<SatelliteIdentity | null> {
    if (OPAQUE_TOKEN.test(token)) {
      const marketplace = await this.fallback(tenantIds, 'an opaque token');
      if (!marketplace) return null;
      const audience = marketplace.satellite_id ?? marketplace.username.toLowerCase();
      return this.askOnce(marketplace, token, this.deps.clock.now() + OPAQUE_CACHE_MS, audience, marketplace.satellite_id);
    }
    let claims: JWTPayload;
    try {
      claims = decodeJwt(token);
    } catch {
      return null;
    }
    // An expired token is refused without asking anyone.
    if (typeof claims.exp !== 'number' || claims.exp * 1000 <= this.deps.clock.now()) return null;
    const expiresAt = claims.exp * 1000;
    const audiences = [...new Set(audiencesOf(claims))];
    const candidates = await this.deps.marketplaces.listActiveByAudiences(
      audiences.map((aud) => aud.toLowerCase()),
      tenantIds,
    );
    if (candidates.length === 0) {
      // No marketplace account is named like the audience (e.g. it was entered as an e-mail): the default
      // marketplace of the one tenant in question may still vouch; the hub's /verify checks the audience,
      // for our satellite only when we have one (a token for another satellite of the account is refused).
      const marketplace = await this.fallback(tenantIds, `audience '${audiences[0] ?? ''}'`);
      if (!marketplace || !(await this.signedFor(marketplace, token, false))) return null;
      return this.askOnce(marketplace, token, expiresAt, audiences[0], marketplace.satellite_id);
    }
    const vouching = await this.vouchingMarketplace(candidates, token, audiences[0] ?? '');
    if (!vouching) return null;
    // A token naming our satellite is verified for it; one naming the username (an older hub's) without it.
    const satelliteId = namesSatellite(vouching, audiences) ? vouching.satellite_id : null;
    return this.askOnce(vouching, token, expiresAt, audiences[0], satelliteId);
  }

  /**
   * The marketplace that may vouch for the token among those named like its audience: the signature is
   * checked with each one's own key set (fetching keys sends no token). Exactly one tenant must accept it.
   * A key set that cannot be fetched leaves the answer open, so it is a 503 unless only the accepting
   * tenant's own marketplaces are in doubt.
   */
  private async vouchingMarketplace(
    candidates: VerifyingMarketplace[],
    token: string,
    audience: string,
  ): Promise<VerifyingMarketplace | undefined> {
    const accepted: VerifyingMarketplace[] = [];
    const unknown: { marketplace: VerifyingMarketplace; error: ServiceUnavailableError }[] = [];
    for (const marketplace of candidates) {
      try {
        if (await this.signedFor(marketplace, token, true)) accepted.push(marketplace);
      } catch (error) {
        if (!(error instanceof ServiceUnavailableError)) throw error;
        unknown.push({ marketplace, error });
      }
    }
    const tenants = [...new Set(accepted.map((marketplace) => marketplace.tenant_id))];
    if (tenants.length > 1) {
      this.deps.log.warn({ audience, tenants }, 'a satellite token matches the marketplaces of several tenants: refused (421)');
      throw new MisdirectedRequestError(
        `Ambiguous audience '${audience}': marketplaces of several tenants would vouch for this token; send X-Tenant-Name`,
      );
    }
    const inDoubt = unknown.find(({ marketplace }) => marketplace.tenant_id !== tenants[0]);
    if (inDoubt) throw inDoubt.error;
    return accepted[0];
  }

  /**
   * Whether the token carries this marketplace's hub signature (and, with `audience`, names its account:
   * our satellite there, or the hub username).
   */
  private async signedFor(marketplace: VerifyingMarketplace, token: string, audience: boolean): Promise<boolean> {
    const accepted = [marketplace.username.toLowerCase(), ...(marketplace.satellite_id ? [marketplace.satellite_id.toLowerCase()] : [])];
    try {
      // jose checks the expiry again (and a not-before), on the same clock as the check above.
      const { payload } = await jwtVerify(token, this.keySet(marketplace.url), {
        algorithms: ['RS256'],
        requiredClaims: ['exp'],
        currentDate: new Date(this.deps.clock.now()),
      });
      // jose compares audiences exactly: the hub's usernames and UUIDs are compared without case here.
      if (audience && !audiencesOf(payload).some((aud) => accepted.includes(aud.toLowerCase()))) return false;
      return true;
    } catch (error) {
      if (isTokenProblem(error)) return false;
      throw new ServiceUnavailableError(`Marketplace '${marketplace.name}' cannot be asked for its signing keys: ${errorMessage(error)}`);
    }
  }

  /**
   * The default marketplace that may vouch when nothing else points at one: that of the one tenant the
   * request names, or of the `default` tenant when it names none. Several tenants (a public host they
   * share) cannot be told apart this way.
   */
  private async fallback(tenantIds: readonly string[] | undefined, what: string): Promise<VerifyingMarketplace | undefined> {
    if (tenantIds === undefined) return this.deps.marketplaces.activeDefault(undefined);
    if (tenantIds.length === 1) return this.deps.marketplaces.activeDefault(tenantIds[0]);
    throw new MisdirectedRequestError(`Several tenants are served at this host and ${what} does not say which: send X-Tenant-Name`);
  }

  /** The hub's answer for this marketplace and token, asked once and kept until `expiresAt`. */
  private async askOnce(
    marketplace: VerifyingMarketplace,
    token: string,
    expiresAt: number,
    audience: string | undefined,
    satelliteId: string | null,
  ): Promise<SatelliteIdentity | null> {
    const key = `${marketplace.id}:${token}`;
    const known = this.verified.get(key);
    if (known) return known;
    const identity = await this.ask(marketplace, token, audience, satelliteId);
    if (identity) this.verified.set(key, identity, expiresAt);
    return identity;
  }

  /** The hub's word on the token; any failure to get it is a 503 (the caller may retry), never a 401. */
  private async ask(
    marketplace: VerifyingMarketplace,
    token: string,
    audience: string | undefined,
    satelliteId: string | null,
  ): Promise<SatelliteIdentity | null> {
    let answer: Awaited<ReturnType<ReturnType<HubClients['client']>['verify']>>;
    try {
      answer = await this.deps.hubs.client(marketplace).verify(token, satelliteId);
    } catch (error) {
      if (error instanceof DomainError) throw new ServiceUnavailableError(error.detail);
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

function audiencesOf(claims: JWTPayload): string[] {
  return (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).filter((aud): aud is string => typeof aud === 'string');
}

/** Whether the token's audience is the marketplace's satellite (not its username). */
function namesSatellite(marketplace: VerifyingMarketplace, audiences: readonly string[]): boolean {
  const id = marketplace.satellite_id?.toLowerCase();
  return id !== undefined && audiences.some((aud) => aud.toLowerCase() === id);
}

function isTokenProblem(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TOKEN_PROBLEMS.has(code);
}
