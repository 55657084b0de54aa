import { createHash } from 'node:crypto';
import { type Clock, systemClock } from '../util/clock.ts';
import type { HubEndpoint } from './endpoint-metadata.ts';
import { HubAnswerError, HubCredentialsError, HubUnavailableError, hubReason } from './hub-errors.ts';
import { HUB_TIMEOUT_MS, type HubAccount, type HubRequest, HubSession } from './hub-session.ts';

export interface HubHealthReport {
  endpoints: { slug: string; status: 'healthy' | 'unhealthy'; checked_at: string }[];
  ttl_seconds: number;
  url: string;
}

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

  /** Creates the endpoint at the hub; when the slug is taken there, updates that endpoint instead. */
  async publish(endpoint: HubEndpoint): Promise<'created' | 'updated'> {
    const action = `publish endpoint '${endpoint.slug}'`;
    const created = await this.session.request({ method: 'POST', path: '/api/v1/endpoints', json: endpoint });
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

  /** Replaces all of the account's endpoints at the hub with these (at most 300). */
  async sync(endpoints: HubEndpoint[]): Promise<void> {
    await this.expectOk({ method: 'POST', path: '/api/v1/endpoints/sync', json: { endpoints } }, 'sync endpoints');
  }

  /** Tells the hub where this knode answers (null clears it). */
  async setDomain(domain: string | null): Promise<void> {
    await this.expectOk({ method: 'PUT', path: '/api/v1/users/me', json: { domain } }, 'set the public URL');
  }

  async reportHealth(report: HubHealthReport): Promise<void> {
    await this.expectOk({ method: 'POST', path: '/api/v1/endpoints/health', json: report }, 'take the health report');
  }

  /** Asks the hub who a satellite token belongs to; the hub checks that it was made for our account. */
  async verify(token: string): Promise<HubVerification> {
    const response = await this.session.request({ method: 'POST', path: '/api/v1/verify', json: { token } });
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

async function done<T>(response: Response, value: T): Promise<T> {
  await response.body?.cancel().catch(() => undefined);
  return value;
}

/** A marketplace as stored: its password sealed. */
export interface StoredMarketplace {
  id: string;
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
  ) {}

  /** Whether knode holds a logged-in session with the marketplace (without logging in to find out). */
  loggedIn(marketplaceId: string): boolean {
    return this.clients.get(marketplaceId)?.client.loggedIn ?? false;
  }

  /** The client of a stored marketplace. */
  client(marketplace: StoredMarketplace): HubClient {
    const { name, url, username } = marketplace;
    return this.entry(marketplace.id, { name, url, username, password: this.openSecret(marketplace.password) });
  }

  /**
   * Logs in with credentials that are not stored yet (a marketplace being created or changed), and
   * keeps the session for that marketplace id. Refused credentials are the caller's mistake: 400.
   */
  async connect(id: string, account: HubAccount): Promise<void> {
    const fingerprint = fingerprintOf(account);
    const known = this.clients.get(id);
    // The session in use stays until the new credentials are proven good.
    const entry =
      known && known.fingerprint === fingerprint ? known : newEntry(account, fingerprint, this.closing.signal, this.timeoutMs, this.clock);
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

  private entry(id: string, account: HubAccount): HubClient {
    const fingerprint = fingerprintOf(account);
    const known = this.clients.get(id);
    if (known && known.fingerprint === fingerprint) {
      known.session.account.name = account.name; // a rename needs no new login
      return known.client;
    }
    const entry = newEntry(account, fingerprint, this.closing.signal, this.timeoutMs, this.clock);
    this.clients.set(id, entry);
    return entry.client;
  }
}

interface Entry {
  fingerprint: string;
  client: HubClient;
  session: HubSession;
}

function newEntry(account: HubAccount, fingerprint: string, closing: AbortSignal, timeoutMs: number, clock: Clock): Entry {
  const { name, url, username, password } = account;
  const session = new HubSession({ name, url, username, password }, closing, timeoutMs, clock);
  return { fingerprint, client: new HubClient(session), session };
}

function fingerprintOf(account: HubAccount): string {
  return createHash('sha256').update(`${account.url}\0${account.username}\0${account.password}`).digest('hex');
}
