/**
 * The console's one way to the API: same origin, JSON only (the request guard refuses anything else on
 * routes that change state), the stored token as bearer. A 401 ends the session and sends the person to
 * the login page; every other failure becomes an ApiError whose `issues` name the fields (422).
 */
import { session } from './session.ts';

export const API = '/api/v1';

export interface Issue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

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

export async function api<T>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T> {
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

/* The shapes the console reads (a subset of each view; see /docs for all of them). */

export type Configuration = Record<string, unknown>;

export interface Ingestion {
  files_total: number;
  /** Files found by keywords (indexed ones included), where the server makes vectors after the keyword index. */
  files_searchable?: number;
  files_indexed: number;
  files_pending: number;
  files_failed: number;
  chunks: number;
  chunks_embedded?: number;
}

export interface Dataset {
  id: string;
  name: string;
  summary: string;
  dtype: string;
  configuration: Configuration;
  status: 'starting' | 'running' | 'stopped' | 'error';
  error: string | null;
  ingestion: Ingestion;
  search: { ranking: string; calibration: string };
  created_at: string;
  updated_at: string;
}

export interface DatasetFile {
  path: string;
  status: 'queued' | 'indexing' | 'searchable' | 'indexed' | 'failed' | 'removed';
  chunks: number;
  error: string | null;
  updated_at: string;
}

export interface Page<T> {
  items: T[];
  total: number;
  skip: number;
  limit: number;
}

export interface Reference {
  document_id: string;
  content: string;
  similarity_score: number;
  metadata: Record<string, unknown>;
}

export interface References {
  documents: Reference[];
  provider_info: Record<string, unknown>;
  cost: number;
}

export interface Model {
  id: string;
  name: string;
  dtype: string;
  configuration: Configuration;
  created_at: string;
  updated_at: string;
}

export interface GenerationDefaults {
  system_prompt?: string;
  temperature?: number;
  max_tokens?: number;
  stop_sequences?: string[];
}

export interface Policy {
  id: string;
  name: string;
  policy_type: string;
  configuration: Configuration;
  endpoint_id?: string;
}

export interface Endpoint {
  id: string;
  name: string;
  slug: string;
  description?: string;
  summary: string;
  response_type: 'raw' | 'summary' | 'both';
  published: boolean;
  tags: string;
  published_to: string[];
  generation_defaults: GenerationDefaults;
  created_at: string;
  model: { id: string; name: string; dtype: string; configuration: Configuration } | null;
  dataset: { id: string; name: string; dtype: string; configuration: Configuration } | null;
  policies?: Policy[];
}

export interface Usage {
  sender_email: string;
  dataset_cost: number;
  model_cost: number;
  total_cost: number;
  tokens: number;
  status: string;
  error: string | null;
  created_at: string;
}

/** GET /endpoints/{slug}/usage/summary: one bucket's (or the range's) figures. */
export interface UsageFigures {
  queries: number;
  succeeded: number;
  failed: number;
  refused: number;
  refused_by: Record<string, number>;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  charged: number;
  latency_ms: { p50: number | null; p95: number | null };
}

export interface UsageSummary {
  bucket: 'hour' | 'day';
  from: string;
  to: string;
  totals: UsageFigures;
  buckets: (UsageFigures & { start: string })[];
  top_callers: { sender_email: string; queries: number; refused: number; cost: number }[];
}

export interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  examples?: unknown[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  pattern?: string;
  format?: string;
}

export interface TypeInfo {
  type: string;
  description: string;
  configuration_schema: JsonSchema;
}

export type Types = Record<'dataset' | 'model' | 'policy', TypeInfo[]>;

export interface FolderListing {
  path: string | null;
  parent: string | null;
  folders: { name: string; path: string; documents: number; models: number; complete: boolean }[];
  files: { name: string; path: string; size: number; kind: 'document' | 'model' }[];
  truncated: boolean;
}

export interface Me {
  email: string;
  tenant_name: string;
  created_at: string;
}
