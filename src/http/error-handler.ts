import type { ErrorObject } from 'ajv';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, type ErrorKind, PolicyError, TooManyRequestsError, ValidationError } from '../domain/errors.ts';
import { schemaIssues } from '../util/json-schema.ts';

const LOCATION: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

// Fastify's own parser errors: a body that is not JSON (or not a supported type) is a 422 on `body`.
const BODY_PARSE_ERRORS = new Set([
  'FST_ERR_CTP_INVALID_JSON_BODY',
  'FST_ERR_CTP_EMPTY_JSON_BODY',
  'FST_ERR_CTP_INVALID_MEDIA_TYPE',
  'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
  'FST_ERR_CTP_INVALID_TYPE',
]);

/** The one table from an error's kind to its HTTP status. */
const STATUS_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  bad_request: 400,
  unauthenticated: 401,
  payment_required: 402,
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
 * `{msg, err}` with the `detail` and `policy_metadata` today's SyftHub clients read (API-CONTRACT 10),
 * else `{detail}`; 401 says how to authenticate, 402 how to pay (the MPP challenge), 429 when to come back.
 */
function sendDomainError(reply: FastifyReply, error: DomainError): FastifyReply {
  reply.code(STATUS_OF_KIND[error.kind]);
  if (error.kind === 'unauthenticated') reply.header('www-authenticate', 'Bearer');
  const retryAfter = error instanceof TooManyRequestsError || error instanceof PolicyError ? error.retryAfterSeconds : undefined;
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  if (error instanceof ValidationError) return reply.send({ detail: error.issues });
  if (error instanceof PolicyError) {
    // A challenge is for one client and expires: no cache may keep it.
    if (error.challenge !== undefined) reply.header('www-authenticate', error.challenge).header('cache-control', 'no-store');
    return reply.send({ detail: error.detail, msg: error.msg, err: error.err, policy_metadata: error.metadata });
  }
  return reply.send({ detail: error.detail });
}

/** Fastify's own errors (media type, unparsable body, its 4xx), and anything else as a logged 500. */
function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return reply.code(415).send({ detail: 'Content-Type must be application/json' });
  }
  if (error.code && BODY_PARSE_ERRORS.has(error.code)) {
    const msg = error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'Body must be JSON' : 'Body is not valid JSON';
    return reply.code(422).send({ detail: [{ loc: ['body'], msg, type: 'json_invalid' }] });
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return reply.code(status).send({ detail: error.message });
  }
  request.log.error({ err: error }, 'request failed');
  return reply.code(500).send({ detail: 'Internal server error' });
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof DomainError) return sendDomainError(reply, error);
    if (error.validation) {
      const context = error.validationContext ?? 'body';
      return reply.code(422).send({ detail: schemaIssues([LOCATION[context] ?? context], error.validation as ErrorObject[]) });
    }
    return sendFrameworkError(error, request, reply);
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: `No route ${request.method} ${request.url.split('?')[0]}` });
  });
}
