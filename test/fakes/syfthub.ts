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
  connect: Record<string, unknown>[];
}

export interface HubRecordedRequest {
  method: string;
  path: string;
  /** The account whose session made the request, if any. */
  username: string | undefined;
  /** The body as sent; a login's password is left out. */
  body: unknown;
}

export interface HealthReport {
  username: string;
  body: { endpoints: { slug: string; status: string; checked_at: string }[]; ttl_seconds: number; url: string };
}

export interface MintOptions {
  /** Seconds until `exp` (60 like the hub; negative for a token that has already expired). */
  expiresInSeconds?: number;
  /** Signed with a key the hub never published, under the hub's current `kid`. */
  forged?: boolean;
}

export interface FakeSyftHubOptions {
  loginsPerMinute?: number;
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
  /** A satellite token for a consumer (registered on first use), made for the `audience` account. */
  mintToken(consumerEmail: string, audience: string, options?: MintOptions): Promise<string>;
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
const TYPES = ['model', 'data_source', 'model_data_source'];
const VISIBILITIES = ['public', 'private', 'internal'];

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export async function startFakeSyftHub(options: FakeSyftHubOptions = {}): Promise<FakeSyftHub> {
  const loginsPerMinute = options.loginsPerMinute ?? 10;
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

  const verify = async (caller: HubUser, token: string): Promise<Response> => {
    counters.verifications++;
    const opaque = opaqueTokens.get(token);
    if (token.startsWith('sat_')) {
      if (!opaque) return json(200, { valid: false, error: 'invalid_token', message: 'Unknown token' });
      return json(200, { valid: true, sub: opaque.id, email: opaque.email, username: opaque.username, role: 'user', aud: caller.username });
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
      if (payload.aud !== caller.username) {
        return json(200, {
          valid: false,
          error: 'audience_mismatch',
          message: `Token audience '${String(payload.aud)}' does not match '${caller.username}'`,
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
    const path = new URL(request.url).pathname;
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
    requests.push({ method, path, username: user?.username, body });
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
      return verify(user, token);
    }
    if (method === 'GET' && path === '/api/v1/users/me/tunnel-credentials') return handOutTunnelCredential(user);
    if (method === 'PUT' && path === '/api/v1/users/me') {
      const domain = (body as { domain?: unknown } | null)?.domain;
      if (domain !== null && typeof domain !== 'string') return issue(['domain'], 'Input should be a valid string');
      if (domainRefusal) return detail(400, domainRefusal);
      domains.set(user.username, domain);
      return json(200, { id: user.id, username: user.username, email: user.email, domain });
    }
    const mine = endpoints.get(user.username) ?? new Map<string, HubEndpointRecord>();
    endpoints.set(user.username, mine);
    if (method === 'POST' && path === '/api/v1/endpoints') {
      const problem = endpointProblem(body);
      if (problem) return problem;
      const endpoint = body as HubEndpointRecord;
      if (mine.has(endpoint.slug)) return detail(400, 'slug already exists - already taken');
      mine.set(endpoint.slug, endpoint);
      return json(201, { id: mine.size, ...endpoint });
    }
    if (method === 'POST' && path === '/api/v1/endpoints/sync') {
      const list = (body as { endpoints?: unknown } | null)?.endpoints;
      if (!Array.isArray(list)) return issue(['endpoints'], 'Field required');
      if (list.length > 300) return issue(['endpoints'], 'List should have at most 300 items');
      for (const item of list) {
        const problem = endpointProblem(item);
        if (problem) return problem;
      }
      mine.clear();
      for (const item of list as HubEndpointRecord[]) mine.set(item.slug, item);
      return json(200, { synced: list.length, endpoints: list });
    }
    if (method === 'POST' && path === '/api/v1/endpoints/health') {
      const report = body as HealthReport['body'] | null;
      if (!report || !Array.isArray(report.endpoints) || typeof report.ttl_seconds !== 'number' || typeof report.url !== 'string') {
        return issue([], 'endpoints, ttl_seconds and url are required');
      }
      healthReports.push({ username: user.username, body: report });
      return json(200, { accepted: report.endpoints.length });
    }
    const bySlug = /^\/api\/v1\/endpoints\/slug\/([^/]+)$/.exec(path);
    if (bySlug?.[1]) {
      const slug = decodeURIComponent(bySlug[1]);
      if (!mine.has(slug)) return detail(404, 'Endpoint not found');
      if (method === 'DELETE') {
        mine.delete(slug);
        return new Response(null, { status: 204 });
      }
      if (method === 'PATCH') {
        const problem = endpointProblem(body);
        if (problem) return problem;
        mine.set(slug, { ...(body as HubEndpointRecord), slug });
        return json(200, body);
      }
    }
    return detail(404, 'Not Found');
  }

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
    domainOf: (username) => domains.get(username.toLowerCase()),
    async mintToken(consumerEmail, audience, mint = {}) {
      const user = consumer(consumerEmail);
      const key = keys.at(-1);
      if (!key) throw new Error('no key');
      const issuedAt = Math.floor(Date.now() / 1000);
      return new SignJWT({ role: 'user' })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
        .setSubject(user.id)
        .setIssuer(url())
        .setAudience(audience)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + (mint.expiresInSeconds ?? 60))
        .sign(mint.forged ? forger.privateKey : key.pair.privateKey);
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
