import type { FastifyRequest } from 'fastify';
import { ValidationError } from '../domain/errors.ts';

/**
 * A PATCH that tries to change a field that cannot change is refused rather than silently ignored
 * (API-CONTRACT 1), so a client never believes it changed something it did not.
 */
export function rejectImmutableFields(fields: readonly string[]) {
  return async (request: FastifyRequest): Promise<void> => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    const issues = fields
      .filter((field) => Object.hasOwn(body, field))
      .map((field) => ({ loc: ['body', field], msg: `Field '${field}' cannot be changed`, type: 'immutable_field' }));
    if (issues.length > 0) throw new ValidationError(issues);
  };
}
