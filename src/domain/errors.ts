/**
 * Every failure a request can end with, as errors that say what kind of failure it is, never which HTTP
 * status it becomes: `http/error-handler.ts` holds the one table from kind to status and body. Services,
 * engines and clients throw these; none of them knows a status code.
 */
import type { PolicyEntry, PolicyMetadata, PolicyOutcome } from './policy-metadata.ts';

export type ErrorKind =
  /** The request names something impossible (the body is fine, the state is not); 400. */
  | 'bad_request'
  /** No credentials, or credentials that are not valid; 401. */
  | 'unauthenticated'
  /** The query must be paid for first (an MPP challenge), or its payment credential was not acceptable; 402. */
  | 'payment_required'
  /** Valid credentials without the permission, or a policy that refuses the query; 403. */
  | 'refused'
  | 'not_found'
  | 'conflict'
  /** A body that is not JSON where JSON is required; 415. */
  | 'unsupported_media'
  /** Meant for another server (an unknown Host), or naming no single tenant; 421. */
  | 'misdirected'
  /** The body breaks the schema or a rule: `ValidationError` carries the issues; 422. */
  | 'invalid'
  /** A limit or a rate policy; 429 with Retry-After. */
  | 'rate_limited'
  /** A server knode called answered with a failure (a model, a hub); 502. */
  | 'upstream'
  /** A server knode needs could not be reached, or knode cannot serve it right now; 503. */
  | 'unavailable'
  /** A server knode called did not answer in time; 504. */
  | 'timeout';

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    /** What the caller is told (the `detail` of the answer): never a secret, never a stack. */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
  }
}

/** The message of any thrown value, for logs and for the `error` of a record (a failed file, a failed publish). */
export function errorMessage(error: unknown): string {
  if (error instanceof DomainError) return error.detail;
  return error instanceof Error ? error.message : String(error);
}

export class BadRequestError extends DomainError {
  constructor(detail: string) {
    super('bad_request', detail);
  }
}

export class UnauthorizedError extends DomainError {
  constructor(detail: 'Not authenticated' | 'Could not validate credentials' | (string & {})) {
    super('unauthenticated', detail);
  }
}

export class ForbiddenError extends DomainError {
  constructor(detail = 'Insufficient permissions') {
    super('refused', detail);
  }
}

export class NotFoundError extends DomainError {
  constructor(detail: string) {
    super('not_found', detail);
  }
}

export class ConflictError extends DomainError {
  constructor(detail: string) {
    super('conflict', detail);
  }
}

/** State-changing routes take JSON only, so a cross-site HTML form cannot reach them. */
export class UnsupportedMediaTypeError extends DomainError {
  constructor(detail = 'Content-Type must be application/json') {
    super('unsupported_media', detail);
  }
}

export class MisdirectedRequestError extends DomainError {
  constructor(detail: string) {
    super('misdirected', detail);
  }
}

export class TooManyRequestsError extends DomainError {
  /** Whole seconds, at least 1: what `Retry-After` says. */
  readonly retryAfterSeconds: number;

  constructor(retryAfterSeconds: number, detail = 'Rate limit exceeded') {
    super('rate_limited', detail);
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
  }
}

export class BadGatewayError extends DomainError {
  constructor(detail: string, options?: { cause?: unknown }) {
    super('upstream', detail, options);
  }
}

export class ServiceUnavailableError extends DomainError {
  constructor(detail: string) {
    super('unavailable', detail);
  }
}

/** One entry of a 422 body: where the problem is, what it is, and a machine-readable type. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class ValidationError extends DomainError {
  constructor(readonly issues: ValidationIssue[]) {
    super('invalid', issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; '));
  }

  /** Shorthand for one problem with one body field, the usual case in services. */
  static body(field: string | (string | number)[], msg: string, type = 'value_error'): ValidationError {
    const path = Array.isArray(field) ? field : [field];
    return new ValidationError([{ loc: ['body', ...path], msg, type }]);
  }
}

/**
 * A policy refused the query: the specification's `{msg, err}` body, a refusal (access, accounting), a rate
 * limit (with the seconds until the window ends) or a payment to make first (402, with the MPP challenge for
 * `WWW-Authenticate`). `err` is what a person reads, and the answer's `detail` unless one is given; `entry`
 * says what the refusing policy did, and the query pipeline sets `metadata`, the `policy_metadata` envelope
 * with the entries of the policies that ran before it (API-CONTRACT 10.2). Refusals are written to the
 * endpoint's usage (usage analytics count them by policy), except a plain 402 that only hands out a challenge
 * (its paid retry is the query), unless the policy says otherwise (`recorded`).
 */
export class PolicyError extends DomainError {
  metadata: PolicyMetadata;
  /** The `WWW-Authenticate` value of a 402 (an MPP challenge). */
  readonly challenge: string | undefined;
  readonly recorded: boolean;

  constructor(
    kind: 'refused' | 'rate_limited' | 'payment_required',
    readonly msg: string,
    readonly err: string,
    readonly entry: PolicyEntry,
    outcome: PolicyOutcome,
    readonly retryAfterSeconds?: number,
    options: { detail?: string; challenge?: string; recorded?: boolean } = {},
  ) {
    super(kind, options.detail ?? err);
    this.metadata = { outcome, entries: [entry] };
    this.challenge = options.challenge;
    this.recorded = options.recorded ?? kind !== 'payment_required';
  }
}
