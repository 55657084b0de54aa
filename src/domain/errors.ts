/**
 * Every error a route can answer with, as classes that carry the specification's body shapes.
 * The one error handler (error-handler.ts) turns them into responses; services throw them and never
 * touch HTTP themselves.
 */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }

  body(): unknown {
    return { detail: this.detail };
  }
}

export class BadRequestError extends HttpError {
  constructor(detail: string) {
    super(400, detail);
  }
}

export class UnauthorizedError extends HttpError {
  constructor(detail: 'Not authenticated' | 'Could not validate credentials' | (string & {})) {
    super(401, detail, { 'www-authenticate': 'Bearer' });
  }
}

export class ForbiddenError extends HttpError {
  constructor(detail = 'Insufficient permissions') {
    super(403, detail);
  }
}

export class NotFoundError extends HttpError {
  constructor(detail: string) {
    super(404, detail);
  }
}

export class ConflictError extends HttpError {
  constructor(detail: string) {
    super(409, detail);
  }
}

/** 415: state-changing routes take JSON only, so a cross-site HTML form cannot reach them. */
export class UnsupportedMediaTypeError extends HttpError {
  constructor(detail = 'Content-Type must be application/json') {
    super(415, detail);
  }
}

/** 421: the request was meant for another server (an unknown Host), or names no single tenant. */
export class MisdirectedRequestError extends HttpError {
  constructor(detail: string) {
    super(421, detail);
  }
}

export class TooManyRequestsError extends HttpError {
  constructor(retryAfterSeconds: number, detail = 'Rate limit exceeded') {
    super(429, detail, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class BadGatewayError extends HttpError {
  constructor(detail: string) {
    super(502, detail);
  }
}

export class ServiceUnavailableError extends HttpError {
  constructor(detail: string) {
    super(503, detail);
  }
}

/** One entry of a 422 body: where the problem is, what it is, and a machine-readable type. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class ValidationError extends HttpError {
  constructor(readonly issues: ValidationIssue[]) {
    super(422, issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; '));
  }

  /** Shorthand for one problem with one body field, the usual case in services. */
  static body(field: string | (string | number)[], msg: string, type = 'value_error'): ValidationError {
    const path = Array.isArray(field) ? field : [field];
    return new ValidationError([{ loc: ['body', ...path], msg, type }]);
  }

  override body(): unknown {
    return { detail: this.issues };
  }
}

/** A policy refused the query: the specification's `{msg, err}` body (403 access/accounting, 429 rate limit). */
export class PolicyError extends HttpError {
  constructor(
    statusCode: 403 | 429,
    readonly msg: string,
    readonly err: string,
    headers: Record<string, string> = {},
  ) {
    super(statusCode, msg, headers);
  }

  override body(): unknown {
    return { msg: this.msg, err: this.err };
  }
}
