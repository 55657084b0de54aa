import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isUniqueViolation } from '../db/database.ts';
import { DomainError, type ErrorKind, PolicyError, TooManyRequestsError, ValidationError, type ValidationIssue } from '../domain/errors.ts';

interface AjvIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

const LOCATION: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

const TYPE_NAMES: Record<string, string> = {
  string: 'string_type',
  integer: 'int_type',
  number: 'float_type',
  boolean: 'bool_type',
  object: 'dict_type',
  array: 'list_type',
  null: 'none_type',
};

/** Maps one schema-validation failure to the specification's `{loc, msg, type}`. */
function toIssue(context: string, issue: AjvIssue): ValidationIssue {
  const loc: (string | number)[] = [LOCATION[context] ?? context];
  for (const segment of issue.instancePath.split('/').slice(1)) {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
    loc.push(/^\d+$/.test(key) ? Number(key) : key);
  }
  const params = issue.params;
  switch (issue.keyword) {
    case 'required':
      return { loc: [...loc, String(params.missingProperty)], msg: 'Field required', type: 'missing' };
    case 'type': {
      const expected = String(params.type).split(',')[0] ?? 'value';
      return { loc, msg: `Input should be of type ${params.type}`, type: TYPE_NAMES[expected] ?? 'type_error' };
    }
    case 'minLength':
      return { loc, msg: `String should have at least ${params.limit} characters`, type: 'string_too_short' };
    case 'maxLength':
      return { loc, msg: `String should have at most ${params.limit} characters`, type: 'string_too_long' };
    case 'pattern':
      return { loc, msg: `String should match pattern '${params.pattern}'`, type: 'string_pattern_mismatch' };
    case 'format':
      return { loc, msg: `Input should be a valid ${params.format}`, type: `${params.format}_parsing` };
    case 'minimum':
    case 'exclusiveMinimum':
      return { loc, msg: `Input should be ${params.comparison} ${params.limit}`, type: 'greater_than_equal' };
    case 'maximum':
    case 'exclusiveMaximum':
      return { loc, msg: `Input should be ${params.comparison} ${params.limit}`, type: 'less_than_equal' };
    case 'enum':
      return {
        loc,
        msg: `Input should be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        type: 'enum',
      };
    case 'minItems':
      return { loc, msg: `List should have at least ${params.limit} items`, type: 'too_short' };
    case 'maxItems':
      return { loc, msg: `List should have at most ${params.limit} items`, type: 'too_long' };
    case 'additionalProperties':
      return { loc: [...loc, String(params.additionalProperty)], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' };
    case 'minProperties':
      return { loc, msg: `At least ${params.limit} field(s) must be given`, type: 'missing' };
    default:
      return { loc, msg: issue.message ?? 'Invalid value', type: 'value_error' };
  }
}

/**
 * An anyOf failure (e.g. "a UUID or null") reports every branch plus a summary line; of those, the
 * branch that got furthest (not a bare type mismatch, when there is one) says what is wrong.
 */
function validationIssues(context: string, issues: AjvIssue[]): ValidationIssue[] {
  const unionPaths = new Set(issues.filter((i) => i.keyword === 'anyOf').map((i) => i.instancePath));
  // A branch that got inside the value (e.g. a list whose item is wrong) says more than "not a string".
  const wentDeeper = (path: string) => issues.some((i) => i.instancePath.startsWith(`${path}/`));
  const chosen = new Map<string, AjvIssue>();
  const result: AjvIssue[] = [];
  for (const issue of issues) {
    if (issue.keyword === 'anyOf' || issue.keyword === 'if') continue;
    if (issue.keyword === 'type' && unionPaths.has(issue.instancePath) && wentDeeper(issue.instancePath)) continue;
    if (!unionPaths.has(issue.instancePath) || issue.keyword === 'required') {
      result.push(issue);
      continue;
    }
    const previous = chosen.get(issue.instancePath);
    if (!previous || (previous.keyword === 'type' && issue.keyword !== 'type')) chosen.set(issue.instancePath, issue);
  }
  result.push(...chosen.values());
  // One issue per location: the first rule broken says enough (an empty name is not also "no visible character").
  const byLoc = new Map<string, ValidationIssue>();
  for (const issue of result.map((i) => toIssue(context, i))) {
    const key = JSON.stringify(issue.loc);
    if (!byLoc.has(key)) byLoc.set(key, issue);
  }
  const mapped = [...byLoc.values()];
  return mapped.length > 0 ? mapped : [{ loc: [LOCATION[context] ?? context], msg: 'Invalid value', type: 'value_error' }];
}

// Fastify's own parser errors: a body that is not JSON (or not a supported type) is a 422 on `body`.
const BODY_PARSE_ERRORS = new Set([
  'FST_ERR_CTP_INVALID_JSON_BODY',
  'FST_ERR_CTP_EMPTY_JSON_BODY',
  'FST_ERR_CTP_INVALID_MEDIA_TYPE',
  'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
  'FST_ERR_CTP_INVALID_TYPE',
]);

/** The one table from an error's kind to its HTTP status. */
export const STATUS_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  bad_request: 400,
  unauthenticated: 401,
  refused: 403,
  not_found: 404,
  conflict: 409,
  unsupported_media: 415,
  misdirected: 421,
  invalid: 422,
  rate_limited: 429,
  upstream: 502,
  unavailable: 503,
  timeout: 504,
};

/**
 * A domain error as the specification's bodies: `{detail: [issues]}` for validation, a policy's
 * `{msg, err}`, else `{detail}`; 401 says how to authenticate, 429 when to come back.
 */
function sendDomainError(reply: FastifyReply, error: DomainError): FastifyReply {
  reply.code(STATUS_OF_KIND[error.kind]);
  if (error.kind === 'unauthenticated') reply.header('www-authenticate', 'Bearer');
  const retryAfter = error instanceof TooManyRequestsError || error instanceof PolicyError ? error.retryAfterSeconds : undefined;
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  if (error instanceof ValidationError) return reply.send({ detail: error.issues });
  if (error instanceof PolicyError) return reply.send({ msg: error.msg, err: error.err });
  return reply.send({ detail: error.detail });
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof DomainError) return sendDomainError(reply, error);
    if (error.validation) {
      const context = error.validationContext ?? 'body';
      return reply.code(422).send({ detail: validationIssues(context, error.validation as AjvIssue[]) });
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.code(415).send({ detail: 'Content-Type must be application/json' });
    }
    if (error.code && BODY_PARSE_ERRORS.has(error.code)) {
      const msg = error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'Body must be JSON' : 'Body is not valid JSON';
      return reply.code(422).send({ detail: [{ loc: ['body'], msg, type: 'json_invalid' }] });
    }
    if (isUniqueViolation(error)) {
      return reply.code(409).send({ detail: 'Resource already exists' });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ detail: error.message });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ detail: 'Internal server error' });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: `No route ${request.method} ${request.url.split('?')[0]}` });
  });
}
