/**
 * A SyftHub marketplace for tests, on a random loopback port. It checks what the real hub checks
 * (API-CONTRACT 9):
 * - login is form-encoded (`username` = user name or e-mail, `password`), at most `loginsPerMinute`
 *   (10, like the hub) per minute from an address, else 429; sessions are bearer tokens with a refresh;
 * - satellite tokens are RS256 JWTs signed with a real key pair, served at /.well-known/jwks.json, with
 *   `aud` = the endpoint owner's hub username; /api/v1/verify answers 200 `{valid: true, email, ...}` only
 *   when the token was made for the calling account, and 200 `{valid: false, error, message}` otherwise;
 * - endpoints are validated like the hub does (slug ≤ 63, description ≤ 500, type, visibility...), a
 *   slug that exists is a 400 "slug already exists - already taken", sync takes at most 300;
 * and it can mint tokens for consumers (JWT or opaque `sat_test_`), forge and expire them, rotate its
 * key, count logins, refuse a domain, fail every request, or go down altogether.
 *
 * Two hubs in one (`version`), both read off syfthub's code by the commits API-CONTRACT 9.1 names:
 * - `2026-07` (the default, syfthub `00fb0768`): no satellite registry. /api/v1/satellites is FastAPI's
 *   404, `satellite_id` is ignored everywhere, tokens name the owner's username, `PUT /users/me` sets the
 *   account's domain, sync replaces all of the account's endpoints. The default, so that the suites written
 *   before the registry keep testing what they were written for.
 * - `2026-09` (syfthub `be72c061` to `11c159a5`): the satellite registry of 9.1. Satellites CRUD with the
 *   hub's canonicalisation of `base_url` and its 404/409/422 bodies; tokens minted with `aud` = the
 *   satellite's UUID (`GET /api/v1/token?owner_username=&resource=`, and the deprecated `?aud=`); /verify
 *   with `satellite_id` (`audience_mismatch` for another satellite's token); publish (`?satellite_id=`),
 *   sync and health find their satellite, and an account with two spaces and no `satellite_id` gets the
 *   AmbiguousSatelliteError 422; health moves the satellite to its `url`; `PUT /users/me` is the legacy way
 *   to register or move the one space.
 * Both validate tags as syfthub's `_validate_and_normalize_tags` does (already at `00fb0768`).
 */
import type { Server } from 'bun';
import { exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from 'jose';

export interface HubUser {
  id: string;
  username: string;
  email: string;
  password: string;
}

export interface HubEndpointRecord {
  name: string;
  description: string;
  type: string;
  visibility: string;
  version: string;
  slug: string;
  readme: string;
  policies: Record<string, unknown>[];
  tags?: string[];
  connect: Record<string, unknown>[];
}

export interface HubRecordedRequest {
  method: string;
  path: string;
  /** The query parameters (publish's `satellite_id`, the token's `owner_username`...). */
  query?: Record<string, string>;
  /** The account whose session made the request, if any. */
  username: string | undefined;
  /** The body as sent; a login's password is left out. */
  body: unknown;
}

export interface HealthReport {
  username: string;
  body: { satellite_id?: string; endpoints: { slug: string; status: string; checked_at: string }[]; ttl_seconds: number; url: string };
}

/** A satellite as the hub of 2026-09 shows it. */
export interface HubSatelliteView {
  id: string;
  kind: 'space' | 'station';
  base_url: string;
  last_seen_at: string | null;
  created_at: string;
}

/** Which hub the double is (see the top of this file). */
export type FakeHubVersion = '2026-07' | '2026-09';

export interface MintOptions {
  /** Seconds until `exp` (60 like the hub; negative for a token that has already expired). */
  expiresInSeconds?: number;
  /** Signed with a key the hub never published, under the hub's current `kid`. */
  forged?: boolean;
  /** `aud` is the audience exactly as given, whatever the hub would mint (a token of another hub version). */
  rawAudience?: boolean;
}

export interface FakeSyftHubOptions {
  loginsPerMinute?: number;
  /** `2026-07` unless said otherwise: the hub without the satellite registry. */
  version?: FakeHubVersion;
}

export interface FakeSyftHub {
  readonly url: string;
  readonly requests: HubRecordedRequest[];
  readonly healthReports: HealthReport[];
  /** Login attempts (form posts to /auth/login), refused ones included. */
  readonly logins: number;
  readonly refreshes: number;
  readonly verifications: number;
  readonly jwksFetches: number;
  addUser(user: { username: string; email: string; password: string }): HubUser;
  setPassword(username: string, password: string): void;
  /** The endpoints an account has at the hub, by slug. */
  endpointsOf(username: string): Map<string, HubEndpointRecord>;
  domainOf(username: string): string | null | undefined;
  readonly version: FakeHubVersion;
  /**
   * A satellite token for a consumer (registered on first use), made for the `audience` account as the
   * hub's `GET /token?aud=<audience>` would: `aud` is that username on the hub of 2026-07, the UUID of the
   * account's one satellite on the hub of 2026-09 (which throws, like the hub's 404/422, for none or two).
   */
  mintToken(consumerEmail: string, audience: string, options?: MintOptions): Promise<string>;
  /** The hub of 2026-09's `GET /token?owner_username=&resource=`: `aud` = the owner's satellite at that origin. */
  mintTokenFor(consumerEmail: string, owner: string, resource: string, options?: MintOptions): Promise<string>;
  /** The account's satellites, oldest first (2026-09). */
  satellitesOf(username: string): HubSatelliteView[];
  /** A satellite the account registered elsewhere (another space of the same account, a station). */
  addSatellite(username: string, kind: 'space' | 'station', baseUrl: string): HubSatelliteView;
  /** Deletes a satellite at the hub, and the endpoints it served (as DELETE /satellites/{id} does). */
  deleteSatellite(id: string): void;
  /** The satellite an endpoint is attached to (null: unattached; undefined: no such endpoint). */
  satelliteOf(username: string, slug: string): string | null | undefined;
  mintOpaqueToken(consumerEmail: string): string;
  /** Signs new tokens with a new key (new `kid`); the key set lists both. */
  rotateKey(): Promise<void>;
  /** Forgets every access token (a request then needs a refresh); with `refresh` also every refresh token. */
  expireSessions(options?: { refresh?: boolean }): void;
  /** Every PUT /users/me answers 400 with this reason (undefined: accept again). */
  refuseDomains(reason: string | undefined): void;
  /** Every request but the key set answers this status (undefined: answer normally again). */
  failWith(status: number | undefined): void;
  /** The ngrok credentials handed out by GET /users/me/tunnel-credentials, one per call (the hub mints one each time). */
  readonly tunnelCredentials: { username: string; auth_token: string; domain: string }[];
  /** That route answers like a hub without ngrok (503 "not configured") or whose ngrok call failed (502); undefined: hands out again. */
  failTunnelCredentials(status: 502 | 503 | undefined): void;
  /** Stops listening (connections are refused) until `up`. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

const SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TAG = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/**
 * The origin the hub of 2026-09 keys a satellite by: trimmed, scheme and host lower-cased, default port,
 * path, query and fragment dropped; http(s) only, no user-info, at most 500 characters; `tunneling:<user>`
 * kept as it is. Undefined: the hub's 422.
 */
export function canonicalSatelliteUrl(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (trimmed === '' || trimmed.length > 500) return undefined;
  if (trimmed.startsWith('tunneling:')) return trimmed;
  let parsed: URL;
  try {
    parsed = new URL(trimmed);
  } catch {
    return undefined;
  }
  if (!['http:', 'https:'].includes(parsed.protocol) || parsed.username || parsed.password || !parsed.hostname) return undefined;
  return `${parsed.protocol}//${parsed.host}`;
}
const TYPES = ['model', 'data_source', 'model_data_source'];
const VISIBILITIES = ['public', 'private', 'internal'];

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export async function startFakeSyftHub(options: FakeSyftHubOptions = {}): Promise<FakeSyftHub> {
  const loginsPerMinute = options.loginsPerMinute ?? 10;
  const version = options.version ?? '2026-07';
  const registry = version !== '2026-07';
  /** Satellites of 2026-09 by id, each with its owner's username; a Map keeps them oldest first. */
  const satellites = new Map<string, HubSatelliteView & { owner: string }>();
  /** Which satellite serves each endpoint (2026-09): username → slug → satellite id, null when unattached. */
  const attachments = new Map<string, Map<string, string | null>>();
  const users = new Map<string, HubUser>();
  const accessTokens = new Map<string, HubUser>();
  const refreshTokens = new Map<string, HubUser>();
  const opaqueTokens = new Map<string, HubUser>();
  const endpoints = new Map<string, Map<string, HubEndpointRecord>>();
  const domains = new Map<string, string | null>();
  const requests: HubRecordedRequest[] = [];
  const healthReports: HealthReport[] = [];
  const loginTimes: number[] = [];
  const counters = { logins: 0, refreshes: 0, verifications: 0, jwksFetches: 0 };
  let domainRefusal: string | undefined;
  let failure: number | undefined;
  const tunnelCredentials: { username: string; auth_token: string; domain: string }[] = [];
  let tunnelCredentialFailure: 502 | 503 | undefined;

  const keys: { kid: string; pair: KeyPair; jwk: JWK }[] = [];
  const addKey = async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    const kid = `hub-key-${keys.length + 1}`;
    keys.push({ kid, pair, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' } });
  };
  await addKey();
  const forger = await generateKeyPair('RS256', { extractable: true });

  let server: Server<undefined> | undefined;
  let port = 0;
  const url = () => `http://127.0.0.1:${port}`;

  const json = (status: number, body: unknown) => Response.json(body, { status });
  const detail = (status: number, text: string) => json(status, { detail: text });
  const issue = (loc: (string | number)[], msg: string) => json(422, { detail: [{ loc: ['body', ...loc], msg, type: 'value_error' }] });
  /** pydantic's 422 anywhere in the request (a query or path parameter). */
  const issueAt = (loc: (string | number)[], msg: string, type = 'value_error') => json(422, { detail: [{ loc, msg, type }] });
  /** The hub's own errors of 2026-09: `{"detail": {"code", "message", ...extra}}`. */
  const hubError = (status: number, code: string, message: string, extra: Record<string, unknown> = {}) =>
    json(status, { detail: { code, message, ...extra } });
  const satelliteNotFound = (id: string) => hubError(404, 'NOT_FOUND', `Satellite '${id}' not found`);
  const ambiguousSatellite = (count: number) =>
    hubError(422, 'VALIDATION_ERROR', `This account owns ${count} satellites; specify which one this request is for via satellite_id`, {
      count,
    });
  const satelliteView = ({ owner: _owner, ...view }: HubSatelliteView & { owner: string }): HubSatelliteView => ({ ...view });
  const satellitesOfUser = (username: string) => [...satellites.values()].filter((satellite) => satellite.owner === username);
  const registerSatellite = (username: string, kind: 'space' | 'station', baseUrl: string) => {
    const satellite = {
      id: crypto.randomUUID(),
      kind,
      base_url: baseUrl,
      last_seen_at: null,
      created_at: new Date().toISOString(),
      owner: username,
    };
    satellites.set(satellite.id, satellite);
    return satellite;
  };
  const attachmentsOf = (username: string) => {
    let mine = attachments.get(username);
    if (!mine) {
      mine = new Map();
      attachments.set(username, mine);
    }
    return mine;
  };
  /**
   * The satellite a write is for (2026-09): the one named (it must be the caller's), else the account's
   * one space; two spaces or more is the AmbiguousSatelliteError; none leaves the endpoints unattached.
   */
  const writeSatellite = (
    user: HubUser,
    given: unknown,
    loc: (string | number)[],
  ): { satellite: (HubSatelliteView & { owner: string }) | null } | Response => {
    if (given !== undefined && given !== null) {
      if (typeof given !== 'string' || !UUID.test(given)) return issueAt(loc, 'Input should be a valid UUID', 'uuid_parsing');
      const satellite = satellites.get(given.toLowerCase());
      if (!satellite || satellite.owner !== user.username) return satelliteNotFound(given);
      return { satellite };
    }
    const spaces = satellitesOfUser(user.username).filter((satellite) => satellite.kind === 'space');
    if (spaces.length >= 2) return ambiguousSatellite(spaces.length);
    return { satellite: spaces[0] ?? null };
  };
  /** Moves a satellite to an origin, unless another satellite of the account holds it (409 CONFLICT). */
  const moveSatellite = (satellite: HubSatelliteView & { owner: string }, origin: string): Response | undefined => {
    const holder = satellitesOfUser(satellite.owner).find((other) => other.base_url === origin && other.id !== satellite.id);
    if (holder) return hubError(409, 'CONFLICT', `Another satellite of this account is registered at '${origin}'`);
    satellite.base_url = origin;
    return undefined;
  };
  /** The `aud` the hub mints for `GET /api/v1/token` with these parameters, or its error answer. */
  const audienceFor = (params: URLSearchParams): { aud: string } | Response => {
    const owner = params.get('owner_username');
    const aud = params.get('aud');
    if (!registry) {
      // 2026-07: the audience is an active user's username.
      if (!aud?.trim()) return json(400, { detail: { error: 'invalid_request', message: "The 'aud' query parameter is required." } });
      if (!users.has(aud.toLowerCase()))
        return json(400, { detail: { error: 'invalid_audience', message: `Audience '${aud}' not found` } });
      return { aud: aud.toLowerCase() };
    }
    if (owner !== null) {
      const account = users.get(owner.toLowerCase());
      if (!account) return hubError(404, 'AUDIENCE_NOT_FOUND', `Audience '${owner}' not found`);
      const resource = params.get('resource');
      const origin = canonicalSatelliteUrl(resource);
      if (!origin) return issueAt(['query', 'resource'], 'Input should be a valid URL');
      const satellite = satellitesOfUser(account.username).find((candidate) => candidate.base_url === origin);
      if (!satellite) return hubError(422, 'VALIDATION_ERROR', `No registered satellite serves '${resource}' for that account`);
      return { aud: satellite.id };
    }
    if (aud === null || !aud.trim()) return issueAt(['query', 'owner_username'], 'Field required', 'missing');
    // The deprecated `?aud=<username>`: while the owner has exactly one satellite, still its id.
    const account = users.get(aud.toLowerCase());
    if (!account) return hubError(404, 'AUDIENCE_NOT_FOUND', `Audience '${aud}' not found`);
    const owned = satellitesOfUser(account.username);
    if (owned.length === 0) return hubError(404, 'NOT_FOUND', `'${aud}' has no registered satellite`);
    if (owned.length > 1) return ambiguousSatellite(owned.length);
    return { aud: (owned[0] as HubSatelliteView).id };
  };
  const sign = (user: HubUser, aud: string, mint: MintOptions): Promise<string> => {
    const key = keys.at(-1);
    if (!key) throw new Error('no key');
    const issuedAt = Math.floor(Date.now() / 1000);
    return new SignJWT({ role: 'user' })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setSubject(user.id)
      .setIssuer(url())
      .setAudience(aud)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + (mint.expiresInSeconds ?? 60))
      .sign(mint.forged ? forger.privateKey : key.pair.privateKey);
  };
  /** What a helper mints through the hub's own rule; the hub's error answer becomes an Error. */
  const mintWith = async (consumerEmail: string, params: URLSearchParams, mint: MintOptions): Promise<string> => {
    const audience = audienceFor(params);
    if (audience instanceof Response) throw new Error(`the hub refuses to mint: ${audience.status} ${await audience.text()}`);
    return sign(consumer(consumerEmail), audience.aud, mint);
  };
  /** syfthub's tag rule: at most 10; each trimmed, lower-cased, 1-30 of [a-z0-9-], no edge or double hyphen. */
  const tagsProblem = (tags: unknown): string | undefined => {
    if (tags === undefined || tags === null) return undefined;
    if (!Array.isArray(tags) || tags.some((tag) => typeof tag !== 'string')) return 'Input should be a valid list of strings';
    if (tags.length > 10) return 'Maximum 10 tags allowed';
    for (const raw of tags as string[]) {
      const tag = raw.trim().toLowerCase();
      if (tag === '') continue;
      if (tag.length > 30) return `Tag '${tag}' must be between 1 and 30 characters`;
      if (!TAG.test(tag)) return `Tag '${tag}' must contain only lowercase letters, numbers, and hyphens. Cannot start or end with hyphen.`;
      if (tag.includes('--')) return `Tag '${tag}' cannot contain consecutive hyphens`;
    }
    return undefined;
  };

  const addUser = (user: { username: string; email: string; password: string }): HubUser => {
    const record = { id: String(users.size + 1), ...user, username: user.username.toLowerCase(), email: user.email.toLowerCase() };
    users.set(record.username, record);
    return record;
  };
  const consumer = (email: string): HubUser =>
    [...users.values()].find((user) => user.email === email.toLowerCase()) ??
    addUser({ username: email.toLowerCase().replace(/[^a-z0-9]+/g, '-'), email, password: crypto.randomUUID() });

  const issueSession = (user: HubUser) => {
    const access = `hub-access-${crypto.randomUUID()}`;
    const refresh = `hub-refresh-${crypto.randomUUID()}`;
    accessTokens.set(access, user);
    refreshTokens.set(refresh, user);
    return { access_token: access, refresh_token: refresh, token_type: 'bearer' };
  };

  const sessionUser = (request: Request): HubUser | undefined => {
    const match = /^Bearer (\S+)$/.exec(request.headers.get('authorization') ?? '');
    return match?.[1] ? accessTokens.get(match[1]) : undefined;
  };

  /** The endpoint body checks of the hub's pydantic model. */
  const endpointProblem = (body: unknown): Response | undefined => {
    if (!body || typeof body !== 'object') return issue([], 'Input should be a valid dictionary');
    const endpoint = body as Record<string, unknown>;
    for (const field of ['name', 'type', 'visibility', 'version', 'slug']) {
      if (typeof endpoint[field] !== 'string' || endpoint[field] === '') return issue([field], 'Field required');
    }
    const slug = endpoint.slug as string;
    if (slug.length < 3 || slug.length > 63) return issue(['slug'], 'String should have at most 63 characters');
    if (!SLUG.test(slug)) return issue(['slug'], 'Slug must contain only lowercase letters, numbers and hyphens');
    if (typeof endpoint.description !== 'string' || endpoint.description.length > 500) {
      return issue(['description'], 'String should have at most 500 characters');
    }
    if (!TYPES.includes(endpoint.type as string)) return issue(['type'], `Input should be ${TYPES.join(', ')}`);
    if (!VISIBILITIES.includes(endpoint.visibility as string)) return issue(['visibility'], 'Input should be public, private or internal');
    if (typeof endpoint.readme !== 'string') return issue(['readme'], 'Input should be a valid string');
    const tags = tagsProblem(endpoint.tags);
    if (tags) return issue(['tags'], `Value error, ${tags}`);
    for (const list of ['policies', 'connect']) {
      if (!Array.isArray(endpoint[list])) return issue([list], 'Input should be a valid list');
      for (const [index, item] of (endpoint[list] as unknown[]).entries()) {
        const entry = item as Record<string, unknown> | null;
        if (!entry || typeof entry.type !== 'string' || typeof entry.enabled !== 'boolean' || typeof entry.config !== 'object') {
          return issue([list, index], 'Input should be a valid object with type, enabled and config');
        }
      }
    }
    return undefined;
  };

  /**
   * POST /api/v1/verify. 2026-07: the token must name the caller's username. 2026-09: without
   * `satellite_id`, any satellite of the caller or its username; with it, that satellite only (it must be
   * the caller's: 404; a UUID: 422).
   */
  const verify = async (caller: HubUser, token: string, satelliteId: unknown): Promise<Response> => {
    counters.verifications++;
    let accepted = [caller.username];
    if (registry && satelliteId !== undefined && satelliteId !== null) {
      if (typeof satelliteId !== 'string' || !UUID.test(satelliteId)) {
        return issueAt(['body', 'satellite_id'], 'Input should be a valid UUID', 'uuid_parsing');
      }
      const satellite = satellites.get(satelliteId.toLowerCase());
      if (!satellite || satellite.owner !== caller.username) return satelliteNotFound(satelliteId);
      accepted = [satellite.id];
    } else if (registry) {
      accepted = [...satellitesOfUser(caller.username).map((satellite) => satellite.id), caller.username];
    }
    const opaque = opaqueTokens.get(token);
    if (token.startsWith('sat_')) {
      if (!opaque) return json(200, { valid: false, error: 'invalid_token', message: 'Unknown token' });
      const aud = accepted.length === 1 ? accepted[0] : caller.username;
      return json(200, { valid: true, sub: opaque.id, email: opaque.email, username: opaque.username, role: 'user', aud });
    }
    try {
      const { payload } = await jwtVerify(
        token,
        async (header) => {
          const key = keys.find((candidate) => candidate.kid === header.kid);
          if (!key) throw new Error('unknown key');
          return key.pair.publicKey;
        },
        { algorithms: ['RS256'], issuer: url() },
      );
      if (typeof payload.aud !== 'string' || !accepted.includes(payload.aud)) {
        return json(200, {
          valid: false,
          error: 'audience_mismatch',
          message: `Token audience '${String(payload.aud)}' does not match '${accepted.join("' or '")}'`,
        });
      }
      const user = [...users.values()].find((candidate) => candidate.id === payload.sub);
      if (!user) return json(200, { valid: false, error: 'user_not_found', message: 'The token user does not exist' });
      return json(200, {
        valid: true,
        sub: user.id,
        email: user.email,
        username: user.username,
        role: 'user',
        aud: payload.aud,
        exp: payload.exp,
        iat: payload.iat,
      });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'ERR_JWT_EXPIRED') return json(200, { valid: false, error: 'token_expired', message: 'The token has expired.' });
      return json(200, { valid: false, error: 'invalid_signature', message: 'The token signature is not valid.' });
    }
  };

  async function handle(request: Request): Promise<Response> {
    const { pathname: path, searchParams } = new URL(request.url);
    const method = request.method;
    if (method === 'GET' && path === '/.well-known/jwks.json') {
      counters.jwksFetches++;
      return json(200, { keys: keys.map((key) => key.jwk) });
    }
    const user = sessionUser(request);
    const contentType = request.headers.get('content-type') ?? '';
    let body: unknown;
    if (path === '/api/v1/auth/login') {
      const form = contentType.startsWith('application/x-www-form-urlencoded') ? new URLSearchParams(await request.text()) : undefined;
      body = form ? { username: form.get('username') } : undefined;
      requests.push({ method, path, username: undefined, body });
      if (failure) return detail(failure, 'The hub is failing on purpose');
      counters.logins++;
      if (!form) return issue(['username'], 'Field required');
      const now = Date.now();
      while (loginTimes.length > 0 && (loginTimes[0] ?? 0) <= now - 60_000) loginTimes.shift();
      if (loginTimes.length >= loginsPerMinute) return detail(429, 'Too many login attempts. Please try again later.');
      loginTimes.push(now);
      const name = (form.get('username') ?? '').toLowerCase();
      const account = users.get(name) ?? [...users.values()].find((candidate) => candidate.email === name);
      if (!account || account.password !== form.get('password')) return detail(401, 'Incorrect username or password');
      return json(200, issueSession(account));
    }
    body = contentType.startsWith('application/json') ? await request.json().catch(() => null) : undefined;
    requests.push({ method, path, query: Object.fromEntries(searchParams), username: user?.username, body });
    if (failure) return detail(failure, 'The hub is failing on purpose');

    if (method === 'POST' && path === '/api/v1/auth/refresh') {
      counters.refreshes++;
      const token = (body as { refresh_token?: unknown } | null)?.refresh_token;
      const owner = typeof token === 'string' ? refreshTokens.get(token) : undefined;
      if (!owner || typeof token !== 'string') return detail(401, 'Invalid refresh token');
      refreshTokens.delete(token);
      return json(200, issueSession(owner));
    }
    if (!user) return detail(401, 'Could not validate credentials');

    if (method === 'POST' && path === '/api/v1/verify') {
      const token = (body as { token?: unknown } | null)?.token;
      if (typeof token !== 'string') return issue(['token'], 'Field required');
      return verify(user, token, (body as { satellite_id?: unknown }).satellite_id);
    }
    if (method === 'GET' && path === '/api/v1/users/me/tunnel-credentials') return handOutTunnelCredential(user);
    if (method === 'GET' && path === '/api/v1/token') {
      const audience = audienceFor(searchParams);
      if (audience instanceof Response) return audience;
      return json(200, { target_token: await sign(user, audience.aud, {}), expires_in: 60 });
    }
    if (method === 'PUT' && path === '/api/v1/users/me') {
      const domain = (body as { domain?: unknown } | null)?.domain;
      if (domain !== null && typeof domain !== 'string') return issue(['domain'], 'Input should be a valid string');
      if (domainRefusal) return detail(400, domainRefusal);
      if (registry) return legacyDomain(user, domain);
      domains.set(user.username, domain);
      return json(200, { id: user.id, username: user.username, email: user.email, domain });
    }
    if (registry && (path === '/api/v1/satellites' || path.startsWith('/api/v1/satellites/')))
      return satelliteRoute(method, path, user, body);
    const mine = endpoints.get(user.username) ?? new Map<string, HubEndpointRecord>();
    endpoints.set(user.username, mine);
    if (method === 'POST' && path === '/api/v1/endpoints') {
      // The hub's order (9.1): the body, then the slug, then the satellite.
      const problem = endpointProblem(body);
      if (problem) return problem;
      const endpoint = body as HubEndpointRecord;
      if (mine.has(endpoint.slug)) return detail(400, 'slug already exists - already taken');
      let satelliteId: string | null = null;
      if (registry) {
        const found = writeSatellite(user, searchParams.get('satellite_id'), ['query', 'satellite_id']);
        if (found instanceof Response) return found;
        satelliteId = found.satellite?.id ?? null;
        attachmentsOf(user.username).set(endpoint.slug, satelliteId);
      }
      mine.set(endpoint.slug, stored(endpoint));
      return json(201, { id: mine.size, ...stored(endpoint), ...(registry ? { satellite_id: satelliteId } : {}) });
    }
    if (method === 'POST' && path === '/api/v1/endpoints/sync') {
      const list = (body as { endpoints?: unknown } | null)?.endpoints;
      if (!Array.isArray(list)) return issue(['endpoints'], 'Field required');
      if (list.length > 300) return issue(['endpoints'], 'List should have at most 300 items');
      for (const item of list) {
        const problem = endpointProblem(item);
        if (problem) return problem;
      }
      if (!registry) {
        mine.clear();
        for (const item of list as HubEndpointRecord[]) mine.set(item.slug, stored(item));
        return json(200, { synced: list.length, endpoints: list });
      }
      // 2026-09: that satellite's endpoints (and the unattached ones) are replaced, not the whole account's.
      const found = writeSatellite(user, (body as { satellite_id?: unknown }).satellite_id, ['body', 'satellite_id']);
      if (found instanceof Response) return found;
      const satelliteId = found.satellite?.id ?? null;
      const attached = attachmentsOf(user.username);
      let deleted = 0;
      for (const slug of [...mine.keys()]) {
        const at = attached.get(slug) ?? null;
        if (at === null || at === satelliteId) {
          mine.delete(slug);
          attached.delete(slug);
          deleted++;
        }
      }
      for (const item of list as HubEndpointRecord[]) {
        mine.set(item.slug, stored(item));
        attached.set(item.slug, satelliteId);
      }
      return json(200, { synced: list.length, deleted, endpoints: list });
    }
    if (method === 'POST' && path === '/api/v1/endpoints/health') {
      const report = body as HealthReport['body'] | null;
      if (!report || !Array.isArray(report.endpoints) || typeof report.ttl_seconds !== 'number' || typeof report.url !== 'string') {
        return issue([], 'endpoints, ttl_seconds and url are required');
      }
      if (!registry) {
        healthReports.push({ username: user.username, body: report });
        return json(200, { accepted: report.endpoints.length });
      }
      // 2026-09: the report is for a satellite, which is moved to `url` and marked seen; the domain is not written.
      const origin = canonicalSatelliteUrl(report.url);
      if (!origin) return issue(['url'], 'Input should be a valid URL');
      const found = writeSatellite(user, report.satellite_id, ['body', 'satellite_id']);
      if (found instanceof Response) return found;
      const satellite = found.satellite ?? registerSatellite(user.username, 'space', origin);
      if (satellite.base_url !== origin) {
        const conflict = moveSatellite(satellite, origin);
        if (conflict) return conflict;
      }
      satellite.last_seen_at = new Date().toISOString();
      healthReports.push({ username: user.username, body: report });
      const updated = report.endpoints.filter((entry) => mine.has(entry.slug)).length;
      return json(200, { updated, ignored: report.endpoints.length - updated });
    }
    const bySlug = /^\/api\/v1\/endpoints\/slug\/([^/]+)$/.exec(path);
    if (bySlug?.[1]) {
      const slug = decodeURIComponent(bySlug[1]);
      if (!mine.has(slug)) return detail(404, 'Endpoint not found');
      if (method === 'DELETE') {
        mine.delete(slug);
        attachmentsOf(user.username).delete(slug);
        return new Response(null, { status: 204 });
      }
      if (method === 'PATCH') {
        // Takes no satellite: the endpoint stays where it is attached.
        const problem = endpointProblem(body);
        if (problem) return problem;
        mine.set(slug, stored({ ...(body as HubEndpointRecord), slug }));
        return json(200, body);
      }
    }
    return detail(404, 'Not Found');
  }

  /** The hub's endpoint as stored: its tags normalised (trimmed, lower-cased, empty ones and repeats dropped). */
  const stored = (endpoint: HubEndpointRecord): HubEndpointRecord => {
    if (!Array.isArray(endpoint.tags)) return endpoint;
    return { ...endpoint, tags: [...new Set(endpoint.tags.map((tag) => tag.trim().toLowerCase()).filter((tag) => tag !== ''))] };
  };

  /**
   * `PUT /users/me {domain}` on the hub of 2026-09 (legacy): registers the account's space at that origin,
   * or moves its one space there (two spaces: 422); null is accepted and ignored.
   */
  const legacyDomain = (user: HubUser, domain: string | null): Response => {
    const profile = () => ({
      id: user.id,
      username: user.username,
      email: user.email,
      domain: oldestSpace(user.username)?.base_url ?? null,
    });
    if (domain === null) return json(200, profile());
    const origin = canonicalSatelliteUrl(domain);
    if (!origin) return issue(['domain'], 'Input should be a valid URL');
    const spaces = satellitesOfUser(user.username).filter((satellite) => satellite.kind === 'space');
    if (spaces.length > 1) return ambiguousSatellite(spaces.length);
    const [space] = spaces;
    if (!space) registerSatellite(user.username, 'space', origin);
    else if (space.base_url !== origin) {
      const conflict = moveSatellite(space, origin);
      if (conflict) return conflict;
    }
    return json(200, profile());
  };
  const oldestSpace = (username: string) => satellitesOfUser(username).find((satellite) => satellite.kind === 'space');

  /** /api/v1/satellites and /api/v1/satellites/{id} (2026-09). */
  const satelliteRoute = (method: string, path: string, user: HubUser, body: unknown): Response => {
    if (path === '/api/v1/satellites') {
      if (method === 'GET') return json(200, satellitesOfUser(user.username).map(satelliteView));
      if (method !== 'POST') return detail(405, 'Method Not Allowed');
      const { kind, base_url: baseUrl } = (body ?? {}) as { kind?: unknown; base_url?: unknown };
      if (kind !== 'space' && kind !== 'station') return issueAt(['body', 'kind'], "Input should be 'space' or 'station'", 'enum');
      const origin = canonicalSatelliteUrl(baseUrl);
      if (!origin) return issueAt(['body', 'base_url'], 'Value error, base_url must be an http(s) origin without user info');
      const held = satellitesOfUser(user.username).find((satellite) => satellite.base_url === origin);
      if (held && held.kind !== kind) {
        return hubError(409, 'SATELLITE_KIND_MISMATCH', `A ${held.kind} of this account is registered at '${origin}'`, {
          expected: kind,
          actual: held.kind,
        });
      }
      return json(201, satelliteView(held ?? registerSatellite(user.username, kind, origin)));
    }
    const id = decodeURIComponent(path.slice('/api/v1/satellites/'.length));
    if (!UUID.test(id)) return issueAt(['path', 'satellite_id'], 'Input should be a valid UUID', 'uuid_parsing');
    const satellite = satellites.get(id.toLowerCase());
    if (!satellite || satellite.owner !== user.username) return satelliteNotFound(id);
    if (method === 'GET') return json(200, satelliteView(satellite));
    if (method === 'PUT') {
      const origin = canonicalSatelliteUrl((body as { base_url?: unknown } | null)?.base_url);
      if (!origin) return issueAt(['body', 'base_url'], 'Value error, base_url must be an http(s) origin without user info');
      const conflict = moveSatellite(satellite, origin);
      return conflict ?? json(200, satelliteView(satellite));
    }
    if (method === 'DELETE') {
      deleteSatelliteAndEndpoints(satellite.id);
      return new Response(null, { status: 204 });
    }
    return detail(405, 'Method Not Allowed');
  };
  const deleteSatelliteAndEndpoints = (id: string) => {
    const satellite = satellites.get(id);
    if (!satellite) return;
    satellites.delete(id);
    const attached = attachmentsOf(satellite.owner);
    for (const [slug, at] of [...attached]) {
      if (at !== id) continue;
      attached.delete(slug);
      endpoints.get(satellite.owner)?.delete(slug);
    }
  };

  /** The hub's answers (syfthub `api/endpoints/users.py`): a new credential bound to `<username>.<its ngrok domain>` each call. */
  const handOutTunnelCredential = (user: HubUser): Response => {
    if (tunnelCredentialFailure === 503) return detail(503, 'Tunnel credentials service is not configured');
    if (tunnelCredentialFailure === 502) return detail(502, 'Tunnel credential service returned an error');
    const credential = {
      username: user.username,
      auth_token: `ngrok-cred-${crypto.randomUUID()}`,
      domain: `${user.username}.syfthub.ngrok.app`,
    };
    tunnelCredentials.push(credential);
    return json(200, { auth_token: credential.auth_token, domain: credential.domain });
  };

  const listen = () => {
    server = Bun.serve({ hostname: '127.0.0.1', port, fetch: handle });
    port = server.port ?? 0;
  };
  listen();

  return {
    get url() {
      return url();
    },
    requests,
    healthReports,
    get logins() {
      return counters.logins;
    },
    get refreshes() {
      return counters.refreshes;
    },
    get verifications() {
      return counters.verifications;
    },
    get jwksFetches() {
      return counters.jwksFetches;
    },
    addUser,
    setPassword(username, password) {
      const user = users.get(username.toLowerCase());
      if (!user) throw new Error(`no hub user ${username}`);
      user.password = password;
    },
    endpointsOf: (username) => endpoints.get(username.toLowerCase()) ?? new Map(),
    // 2026-09: a profile's domain is the origin of its oldest space.
    domainOf: (username) => (registry ? oldestSpace(username.toLowerCase())?.base_url : domains.get(username.toLowerCase())),
    version,
    async mintToken(consumerEmail, audience, mint = {}) {
      // 2026-07 mints for any audience named (tests forge wrong ones); 2026-09 as its deprecated `?aud=`.
      if (mint.rawAudience || !registry) return sign(consumer(consumerEmail), audience, mint);
      return mintWith(consumerEmail, new URLSearchParams({ aud: audience }), mint);
    },
    mintTokenFor(consumerEmail, owner, resource, mint = {}) {
      return mintWith(consumerEmail, new URLSearchParams({ owner_username: owner, resource }), mint);
    },
    satellitesOf: (username) => satellitesOfUser(username.toLowerCase()).map(satelliteView),
    addSatellite(username, kind, baseUrl) {
      const origin = canonicalSatelliteUrl(baseUrl);
      if (!origin) throw new Error(`not a satellite URL: ${baseUrl}`);
      return satelliteView(registerSatellite(username.toLowerCase(), kind, origin));
    },
    deleteSatellite: (id) => deleteSatelliteAndEndpoints(id),
    satelliteOf: (username, slug) => {
      if (!endpoints.get(username.toLowerCase())?.has(slug)) return undefined;
      return attachments.get(username.toLowerCase())?.get(slug) ?? null;
    },
    mintOpaqueToken(consumerEmail) {
      const token = `sat_test_${crypto.randomUUID().replace(/-/g, '')}`;
      opaqueTokens.set(token, consumer(consumerEmail));
      return token;
    },
    rotateKey: addKey,
    expireSessions({ refresh = false } = {}) {
      accessTokens.clear();
      if (refresh) refreshTokens.clear();
    },
    refuseDomains(reason) {
      domainRefusal = reason;
    },
    failWith(status) {
      failure = status;
    },
    tunnelCredentials,
    failTunnelCredentials(status) {
      tunnelCredentialFailure = status;
    },
    async down() {
      await server?.stop(true);
      server = undefined;
    },
    async up() {
      if (!server) listen();
    },
    async close() {
      await server?.stop(true);
      server = undefined;
    },
  };
}
