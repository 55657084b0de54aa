import { createHash } from 'node:crypto';
import { type Clock, systemClock } from '../util/clock.ts';
import type { HubEndpoint } from './endpoint-metadata.ts';
import { HubAnswerError, HubCredentialsError, HubUnavailableError, hubReason } from './hub-errors.ts';
import { HUB_TIMEOUT_MS, type HubAccount, type HubRequest, HubSession } from './hub-session.ts';

export interface HubHealthReport {
  /** This knode's satellite at a hub with the registry (API-CONTRACT 9.1), so the hub need not guess among the account's spaces. */
  satellite_id?: string;
  endpoints: { slug: string; status: 'healthy' | 'unhealthy'; checked_at: string }[];
  ttl_seconds: number;
  url: string;
}

/** A satellite as the hub's registry shows it (API-CONTRACT 9.1). */
export interface HubSatellite {
  id: string;
  kind: string;
  base_url: string;
}

/**
 * What the registry answered: the satellite, or `absent` (a hub of 2026-07 has no registry: 404 on
 * /api/v1/satellites), `gone` (no satellite of the account has that id: 404 NOT_FOUND) or `taken`
 * (another satellite of the account holds that origin: 409 CONFLICT).
 */
export type SatelliteAnswer = { satellite: HubSatellite } | { absent: true } | { gone: true } | { taken: string };

/** POST /api/v1/verify always answers 200: either who the token belongs to, or why it is not good. */
export type HubVerification =
  | { valid: true; email: string; username: string | undefined; sub: string | undefined }
  | { valid: false; error: string; message: string };

/** SyftHub answers a taken slug with 400 "slug already exists - already taken". */
const SLUG_TAKEN = /slug.*(already|taken|exist)|(already|taken|exist).*slug/i;

/** An ngrok credential the hub minted for its user, and the one host it may bind (`<username>.syfthub.ngrok.app`). */
export interface HubTunnelCredentials {
  authToken: string;
  domain: string;
}

/** A DNS name (labels of letters, digits, `-` and `_`): what ngrok is asked to bind, so never a URL or a path. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)+$/;

/** How much of the hub's reason a tunnel-credential failure quotes: enough to say what failed, never a page. */
const SHORT_REASON = 120;

/** The SyftHub operations knode uses (API-CONTRACT 9), each on the marketplace's one session. */
export class HubClient {
  constructor(private readonly session: HubSession) {}

  get name(): string {
    return this.session.account.name;
  }

  get loggedIn(): boolean {
    return this.session.loggedIn;
  }

  /** Logs in if there is no session yet: proves the credentials (HubCredentialsError when refused). */
  async connect(): Promise<void> {
    await this.session.open();
  }

  /**
   * Creates the endpoint at the hub (attached to our satellite when there is one); when the slug is taken
   * there, updates that endpoint instead (the hub's PATCH takes no satellite: the endpoint keeps its own).
   */
  async publish(endpoint: HubEndpoint, satelliteId?: string | null): Promise<'created' | 'updated'> {
    const action = `publish endpoint '${endpoint.slug}'`;
    const query = satelliteId ? `?satellite_id=${encodeURIComponent(satelliteId)}` : '';
    const created = await this.session.request({ method: 'POST', path: `/api/v1/endpoints${query}`, json: endpoint });
    if (created.ok) return done(created, 'created');
    if (created.status !== 400) return this.session.fail(created, action);
    const reason = await hubReason(created, this.session.secrets);
    if (!SLUG_TAKEN.test(reason)) {
      throw new HubAnswerError(`${this.session.label} refused to ${action} (400): ${reason}`, 400, reason);
    }
    const path = `/api/v1/endpoints/slug/${encodeURIComponent(endpoint.slug)}`;
    const updated = await this.session.request({ method: 'PATCH', path, json: endpoint });
    if (updated.ok) return done(updated, 'updated');
    return this.session.fail(updated, `update endpoint '${endpoint.slug}'`);
  }

  /** Removes the endpoint from the hub; one that is not there (404) is already where we want it. */
  async unpublish(slug: string): Promise<'removed' | 'absent'> {
    const response = await this.session.request({ method: 'DELETE', path: `/api/v1/endpoints/slug/${encodeURIComponent(slug)}` });
    if (response.ok) return done(response, 'removed');
    if (response.status === 404) return done(response, 'absent');
    return this.session.fail(response, `remove endpoint '${slug}'`);
  }

  /**
   * Replaces the endpoints at the hub with these (at most 300): those of our satellite when there is one
   * (the account may run other spaces, whose endpoints stay), else all of the account's.
   */
  async sync(endpoints: HubEndpoint[], satelliteId?: string | null): Promise<void> {
    const json = satelliteId ? { satellite_id: satelliteId, endpoints } : { endpoints };
    await this.expectOk({ method: 'POST', path: '/api/v1/endpoints/sync', json }, 'sync endpoints');
  }

  /**
   * Registers a satellite of kind `space` at this origin; the hub answers the one the account already has
   * there, so calling again is harmless (API-CONTRACT 9.1).
   */
  async registerSatellite(baseUrl: string): Promise<SatelliteAnswer> {
    const response = await this.session.request({ method: 'POST', path: '/api/v1/satellites', json: { kind: 'space', base_url: baseUrl } });
    return this.satelliteAnswer(response, 'register this server as a satellite', false);
  }

  /** Moves a satellite to another origin (the same id: the tokens' audience does not change). */
  async moveSatellite(id: string, baseUrl: string): Promise<SatelliteAnswer> {
    const response = await this.session.request({
      method: 'PUT',
      path: `/api/v1/satellites/${encodeURIComponent(id)}`,
      json: { base_url: baseUrl },
    });
    return this.satelliteAnswer(response, 'move this server’s satellite', true);
  }

  /** Tells the hub where this knode answers (null clears it). */
  async setDomain(domain: string | null): Promise<void> {
    await this.expectOk({ method: 'PUT', path: '/api/v1/users/me', json: { domain } }, 'set the public URL');
  }

  async reportHealth(report: HubHealthReport): Promise<void> {
    await this.expectOk({ method: 'POST', path: '/api/v1/endpoints/health', json: report }, 'take the health report');
  }

  /**
   * Asks the hub who a satellite token belongs to; the hub checks that it was made for our account, and,
   * given our satellite's id, for that satellite only (a token for another space of the account is refused).
   */
  async verify(token: string, satelliteId?: string | null): Promise<HubVerification> {
    const json = satelliteId ? { token, satellite_id: satelliteId } : { token };
    const response = await this.session.request({ method: 'POST', path: '/api/v1/verify', json });
    if (!response.ok) return this.session.fail(response, 'verify a satellite token', [token]);
    const body = (await response.json().catch(() => null)) as Record<string, unknown> | null;
    if (body?.valid === true) {
      // A guest token names nobody: with no e-mail there is no caller for the policies to judge.
      if (typeof body.email !== 'string' || body.email === '') {
        return { valid: false, error: 'no_email', message: 'The token does not name a user with an e-mail address' };
      }
      return {
        valid: true,
        email: body.email,
        username: typeof body.username === 'string' ? body.username : undefined,
        sub: body.sub === undefined || body.sub === null ? undefined : String(body.sub),
      };
    }
    return {
      valid: false,
      error: typeof body?.error === 'string' ? body.error : 'invalid_token',
      message: typeof body?.message === 'string' ? body.message : 'The marketplace did not accept the token',
    };
  }

  private async satelliteAnswer(response: Response, action: string, known: boolean): Promise<SatelliteAnswer> {
    if (response.ok) {
      const body = (await response.json().catch(() => null)) as Record<string, unknown> | null;
      if (typeof body?.id !== 'string' || typeof body.base_url !== 'string') {
        throw new HubAnswerError(`${this.session.label} answered the request to ${action} without a satellite`, response.status, 'no id');
      }
      return { satellite: { id: body.id, kind: String(body.kind ?? 'space'), base_url: body.base_url } };
    }
    if (response.status === 404) {
      // The hub's own 404 names its code; FastAPI's "Not Found" for a route it lacks means no registry at all.
      const code = await errorCode(response);
      return known && code === 'NOT_FOUND' ? { gone: true } : { absent: true };
    }
    if (response.status === 409 && known) return { taken: await hubReason(response, this.session.secrets) };
    return this.session.fail(response, action);
  }

  /**
   * A fresh ngrok credential for the account's tunnel host (API-CONTRACT 9.1, Tunnel; also on the hub of
   * 2026-07). The hub mints a new one in its ngrok account at each call and keeps none, so callers ask only
   * when a tunnel is being started. The hub's failures say whose fault they are: 503 "not configured" (the
   * hub hands out none: paste an ngrok token instead), 502 (ngrok failed the hub), 404 (a hub without the route).
   */
  async tunnelCredentials(): Promise<HubTunnelCredentials> {
    const label = this.session.label;
    const response = await this.session.request({ method: 'GET', path: '/api/v1/users/me/tunnel-credentials' });
    if (!response.ok) {
      if (response.status === 429) return this.session.fail(response, 'hand out tunnel credentials');
      const reason = (await hubReason(response, this.session.secrets)).slice(0, SHORT_REASON);
      const instead = 'start the tunnel with an ngrok authtoken instead';
      if (response.status === 503) {
        throw new HubUnavailableError(`${label} does not hand out tunnel credentials (503: ${reason}): ${instead}`);
      }
      if (response.status === 404) {
        throw new HubAnswerError(`${label} does not offer tunnel credentials (404: ${reason}): ${instead}`, 404, reason);
      }
      if (response.status >= 500) {
        throw new HubAnswerError(
          `${label} could not get a tunnel credential from ngrok (${response.status}: ${reason})`,
          response.status,
          reason,
        );
      }
      return this.session.fail(response, 'hand out tunnel credentials');
    }
    const body = (await response.json().catch(() => null)) as { auth_token?: unknown; domain?: unknown } | null;
    const domain = typeof body?.domain === 'string' ? body.domain.trim().toLowerCase() : '';
    if (typeof body?.auth_token !== 'string' || body.auth_token === '' || !HOST_NAME.test(domain)) {
      // Nothing of the body is quoted: it may hold the token.
      throw new HubAnswerError(`${label} answered without a usable tunnel credential (auth_token and domain)`, 200, 'no credential');
    }
    return { authToken: body.auth_token, domain };
  }

  private async expectOk(request: HubRequest, action: string): Promise<void> {
    const response = await this.session.request(request);
    if (!response.ok) await this.session.fail(response, action);
    await done(response, undefined);
  }
}

/** The `code` of the hub's own errors (`{"detail": {"code", "message"}}`), if the answer has one. */
async function errorCode(response: Response): Promise<string | undefined> {
  const body = (await response.json().catch(() => null)) as { detail?: { code?: unknown } } | null;
  const code = body?.detail && typeof body.detail === 'object' ? body.detail.code : undefined;
  return typeof code === 'string' ? code : undefined;
}

async function done<T>(response: Response, value: T): Promise<T> {
  await response.body?.cancel().catch(() => undefined);
  return value;
}

/** A marketplace as stored: its password sealed. */
export interface StoredMarketplace {
  id: string;
  /** Whose marketplace it is: what its calls may reach is the tenant's (outbound/). */
  tenant_id?: string;
  name: string;
  url: string;
  username: string;
  password: string;
}

/**
 * One HubClient (one session) per marketplace, kept for as long as its URL and credentials stay the
 * same: every query, publication and heartbeat of a marketplace shares the one login.
 */
export class HubClients {
  private readonly clients = new Map<string, Entry>();
  private readonly closing = new AbortController();

  constructor(
    /** Opens a sealed password (the secret box). */
    private readonly openSecret: (sealed: string) => string,
    private readonly timeoutMs = HUB_TIMEOUT_MS,
    /** What the pause after a failed login is measured by. */
    private readonly clock: Clock = systemClock,
    /** The outbound module's fetch for a tenant (the global fetch only in tests of the protocol itself). */
    private readonly outbound: HubFetcher = async () => fetch,
  ) {}

  /** Whether knode holds a logged-in session with the marketplace (without logging in to find out). */
  loggedIn(marketplaceId: string): boolean {
    return this.clients.get(marketplaceId)?.client.loggedIn ?? false;
  }

  /** The client of a stored marketplace. */
  client(marketplace: StoredMarketplace): HubClient {
    const { name, url, username } = marketplace;
    return this.entry(marketplace.id, { name, url, username, password: this.openSecret(marketplace.password) }, marketplace.tenant_id);
  }

  /**
   * Logs in with credentials that are not stored yet (a marketplace being created or changed), and
   * keeps the session for that marketplace id. Refused credentials are the caller's mistake: 400.
   */
  async connect(id: string, account: HubAccount, tenantId?: string): Promise<void> {
    const fingerprint = fingerprintOf(account);
    const known = this.clients.get(id);
    // The session in use stays until the new credentials are proven good.
    const entry = known && known.fingerprint === fingerprint ? known : this.newEntry(account, fingerprint, tenantId);
    try {
      await entry.client.connect();
    } catch (error) {
      throw error instanceof HubCredentialsError ? error.asBadRequest() : error;
    }
    this.clients.set(id, entry);
  }

  forget(id: string): void {
    this.clients.delete(id);
  }

  /** Stops every request in flight (shutdown). */
  close(): void {
    this.closing.abort();
    this.clients.clear();
  }

  private entry(id: string, account: HubAccount, tenantId: string | undefined): HubClient {
    const fingerprint = fingerprintOf(account);
    const known = this.clients.get(id);
    if (known && known.fingerprint === fingerprint) {
      known.session.account.name = account.name; // a rename needs no new login
      return known.client;
    }
    const entry = this.newEntry(account, fingerprint, tenantId);
    this.clients.set(id, entry);
    return entry.client;
  }

  private newEntry(account: HubAccount, fingerprint: string, tenantId: string | undefined): Entry {
    const { name, url, username, password } = account;
    const fetcher = () => this.outbound(tenantId);
    const session = new HubSession({ name, url, username, password }, this.closing.signal, this.timeoutMs, this.clock, fetcher);
    return { fingerprint, client: new HubClient(session), session };
  }
}

/** The fetch a tenant's marketplace calls go through (outbound/); undefined: a marketplace of no known tenant. */
export type HubFetcher = (tenantId: string | undefined) => Promise<(url: string, init: RequestInit) => Promise<Response>>;

interface Entry {
  fingerprint: string;
  client: HubClient;
  session: HubSession;
}

function fingerprintOf(account: HubAccount): string {
  return createHash('sha256').update(`${account.url}\0${account.username}\0${account.password}`).digest('hex');
}
