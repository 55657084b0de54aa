/**
 * The console's one way to the API: same origin, JSON only (the request guard refuses anything else on
 * routes that change state), the stored token as bearer. A 401 ends the session and sends the person to
 * the login page; every other failure becomes an ApiError whose `issues` name the fields (422).
 */
import { session } from './session.ts';
import type { Issue } from './views.ts';

const API = '/api/v1';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: Issue[] = [],
    readonly body: unknown = undefined,
  ) {
    super(message);
  }

  /** Issues keyed by their location without the leading `body`/`query` (e.g. `configuration.ingestionPath`). */
  fieldErrors(): Record<string, string> {
    const errors: Record<string, string> = {};
    for (const issue of this.issues) {
      const key = issue.loc.slice(1).join('.') || '_';
      errors[key] ??= issue.msg;
    }
    return errors;
  }
}

/** What a person reads of an error body: `detail` (a string, or the 422 list), else the policy's `err`. */
function messageOf(status: number, body: unknown): { message: string; issues: Issue[] } {
  if (body && typeof body === 'object') {
    const { detail, err, msg } = body as { detail?: unknown; err?: unknown; msg?: unknown };
    if (Array.isArray(detail)) {
      const issues = detail as Issue[];
      return { message: issues.map((issue) => `${issue.loc.slice(1).join('.') || 'request'}: ${issue.msg}`).join('; '), issues };
    }
    if (typeof detail === 'string') return { message: detail, issues: [] };
    if (typeof err === 'string') return { message: err, issues: [] };
    if (typeof msg === 'string') return { message: msg, issues: [] };
  }
  return { message: `The server answered ${status}`, issues: [] };
}

export interface RequestOptions {
  /** Send no token (login, registration, first-run status). */
  anonymous?: boolean;
  signal?: AbortSignal;
  /** Sent as they are (e.g. `x-knode-origin` for the playground's questions). */
  headers?: Record<string, string>;
}

/** The raw response of an authenticated request (streams read it themselves); a 401 ends the session. */
export async function send(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const token = session.token.value;
  if (token && !options.anonymous) headers.authorization = `Bearer ${token}`;
  const response = await fetch(`${API}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (response.status === 401 && token && !options.anonymous) session.expire();
  return response;
}

export async function failure(response: Response): Promise<ApiError> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const { message, issues } = messageOf(response.status, body);
  return new ApiError(response.status, message, issues, body);
}

async function api<T>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T> {
  const response = await send(method, path, body, options);
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/**
 * An API path whose interpolated values are each encoded (`apiPath\`/datasets/${id}/files\``): a value
 * taken from the page's URL (a dataset id, an endpoint slug) cannot add segments, `..` or a query, so a
 * crafted console link cannot steer the user's token to another route.
 */
export function apiPath(strings: TemplateStringsArray, ...values: (string | number | boolean)[]): string {
  return strings.reduce((path, part, index) => path + part + (index < values.length ? encodeURIComponent(String(values[index])) : ''), '');
}

export const get = <T>(path: string, options?: RequestOptions) => api<T>('GET', path, undefined, options);
export const post = <T>(path: string, body?: unknown, options?: RequestOptions) => api<T>('POST', path, body, options);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);
