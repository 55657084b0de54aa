import { OutboundRefusedError } from '../outbound/errors.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import { displayUrl, HubAnswerError, HubCredentialsError, HubUnavailableError, hubReason, unreachableReason } from './hub-errors.ts';

/** A marketplace account as knode uses it: where the hub is and how to log in (password in clear, in memory only). */
export interface HubAccount {
  /** The marketplace's name in knode, for messages. */
  name: string;
  /** Base URL of the hub, without a trailing slash. */
  url: string;
  username: string;
  password: string;
}

export interface HubRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  json?: unknown;
}

export const HUB_TIMEOUT_MS = 10_000;
/**
 * After a failed login, the same failure is answered for this long instead of logging in again: a hub
 * that refuses us (or is down) then sees at most 10 attempts a minute, its own limit, however busy knode is.
 */
export const LOGIN_RETRY_MS = 6_000;

/**
 * One logged-in session with a hub (API-CONTRACT 9). The hub allows 10 logins a minute per IP, so a
 * session logs in once and then lives on: a 401 is answered by a refresh, and only a failed refresh
 * leads to a new login. Concurrent requests share one login or refresh (never one each).
 */
export class HubSession {
  private accessToken: string | undefined;
  private refreshToken: string | undefined;
  private renewal: Promise<void> | undefined;
  private lastLoginFailure: { at: number; error: unknown } | undefined;

  constructor(
    readonly account: HubAccount,
    /** Aborted when knode shuts down: requests in flight stop at once. */
    private readonly closing: AbortSignal,
    private readonly timeoutMs = HUB_TIMEOUT_MS,
    private readonly clock: Clock = systemClock,
    /**
     * The outbound module's fetch for the marketplace's tenant (outbound/fetch.ts: addresses checked,
     * answers bounded, no redirect to another host); the global fetch only in tests of the protocol itself.
     */
    private readonly fetcher: () => Promise<(url: string, init: RequestInit) => Promise<Response>> = async () => fetch,
  ) {}

  /** Whether the session holds an access token (it logged in and was not refused since). */
  get loggedIn(): boolean {
    return this.accessToken !== undefined;
  }

  /** Secrets that must never appear in a message built from the hub's answers. */
  get secrets(): string[] {
    return [this.account.password, this.accessToken ?? '', this.refreshToken ?? ''];
  }

  get label(): string {
    return `Marketplace '${this.account.name}'`;
  }

  /** Logs in unless a session exists (checks the credentials; throws HubCredentialsError when refused). */
  async open(): Promise<void> {
    if (this.accessToken) return;
    await this.once(() => this.login());
  }

  /** Sends an authorized request; a 401 renews the session once (refresh, else login) and retries. */
  async request(request: HubRequest): Promise<Response> {
    await this.open();
    const used = this.accessToken;
    const response = await this.send(request, used);
    if (response.status !== 401) return response;
    await response.body?.cancel().catch(() => undefined);
    // Another request may have renewed the session meanwhile: then its token is simply used.
    if (this.accessToken === used) {
      await this.once(async () => {
        if (!(await this.refresh())) await this.login();
      });
    }
    return this.send(request, this.accessToken);
  }

  /** Turns an answer that is not 2xx into the matching error, quoting the hub's reason. */
  async fail(response: Response, action: string, secrets: readonly string[] = []): Promise<never> {
    const reason = await hubReason(response, [...this.secrets, ...secrets]);
    if (response.status === 429 || response.status === 503) {
      throw new HubUnavailableError(`${this.label} is not available to ${action} right now (${response.status}): ${reason}`);
    }
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get('location');
      const where = location ? ` to ${displayUrl(new URL(location, this.account.url).toString())}` : '';
      throw new HubAnswerError(`${this.label} redirects${where}: configure the marketplace with that URL`, response.status, reason);
    }
    throw new HubAnswerError(`${this.label} refused to ${action} (${response.status}): ${reason}`, response.status, reason);
  }

  private once(work: () => Promise<void>): Promise<void> {
    this.renewal ??= work().finally(() => {
      this.renewal = undefined;
    });
    return this.renewal;
  }

  private async login(): Promise<void> {
    const failed = this.lastLoginFailure;
    if (failed && this.clock.now() - failed.at < LOGIN_RETRY_MS) throw failed.error;
    try {
      await this.logIn();
      this.lastLoginFailure = undefined;
    } catch (error) {
      this.lastLoginFailure = { at: this.clock.now(), error };
      throw error;
    }
  }

  private async logIn(): Promise<void> {
    // The old tokens stay until new ones arrive: requests in flight keep a consistent view meanwhile.
    const form = new URLSearchParams({ username: this.account.username, password: this.account.password });
    const response = await this.fetch('/api/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
    });
    if ([400, 401, 403, 422].includes(response.status)) {
      const reason = await hubReason(response, this.secrets);
      throw new HubCredentialsError(
        `${this.label} refused the credentials of '${this.account.username}': ${reason}`,
        response.status,
        reason,
      );
    }
    if (response.status === 429) {
      await response.body?.cancel().catch(() => undefined);
      throw new HubUnavailableError(
        `${this.label} refused to log in: too many logins from this address (the hub allows 10 a minute); try again in a minute`,
      );
    }
    if (!response.ok) await this.fail(response, 'log in');
    this.accept(await this.tokens(response), 'log in');
  }

  /** Exchanges the refresh token for a new access token; false when that is not possible. */
  private async refresh(): Promise<boolean> {
    if (!this.refreshToken) return false;
    const response = await this.fetch('/api/v1/auth/refresh', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ refresh_token: this.refreshToken }),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return false;
    }
    const tokens = await this.tokens(response);
    if (!tokens.access_token) return false;
    this.accept(tokens, 'refresh the session');
    return true;
  }

  private async tokens(response: Response): Promise<{ access_token?: string; refresh_token?: string }> {
    const body = (await response.json().catch(() => null)) as { access_token?: unknown; refresh_token?: unknown } | null;
    return {
      access_token: typeof body?.access_token === 'string' ? body.access_token : undefined,
      refresh_token: typeof body?.refresh_token === 'string' ? body.refresh_token : undefined,
    };
  }

  private accept(tokens: { access_token?: string; refresh_token?: string }, action: string): void {
    if (!tokens.access_token) {
      throw new HubAnswerError(`${this.label} answered the request to ${action} without an access token`, 200, 'no access_token');
    }
    this.accessToken = tokens.access_token;
    // A hub that does not rotate refresh tokens answers without one: the old one stays good.
    if (tokens.refresh_token) this.refreshToken = tokens.refresh_token;
  }

  private send(request: HubRequest, token: string | undefined): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (request.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.json);
    }
    return this.fetch(request.path, { method: request.method, headers, body });
  }

  private async fetch(path: string, init: RequestInit): Promise<Response> {
    try {
      const fetcher = await this.fetcher();
      return await fetcher(`${this.account.url}${path}`, {
        ...init,
        // A redirect would carry our bearer token elsewhere: it is reported instead of followed.
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.closing]),
      });
    } catch (error) {
      // An address knode may not call is not the hub being down: the refusal says why (403).
      if (error instanceof OutboundRefusedError) throw error;
      throw new HubUnavailableError(
        `${this.label} at ${displayUrl(this.account.url)} cannot be reached: ${unreachableReason(error, this.timeoutMs)}`,
      );
    }
  }
}
