import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../domain/errors.ts';

/**
 * How deep any JSON body may nest, the body itself being level 1. The deepest bodies knode needs are a
 * configuration (level 2, itself at most MAX_CONFIGURATION_DEPTH = 10 levels, see issues.ts) and a JSON
 * schema in a query's `response_format`; 32 leaves room for both. Unbounded, a 1 MiB body nests 500,000
 * levels: the JSON parser copes (it is iterative), but the first recursive code that walks the value
 * (JSON.stringify, a client library serialising a request, a schema-to-grammar converter) overflows the
 * stack, and the request ends in a 500.
 */
export const MAX_JSON_BODY_DEPTH = 32;

/**
 * The path to the first object or array nested deeper than `maxDepth` (`value` itself is level 1), or
 * undefined. Without recursion, and it stops at the first hit: it exists to be run on values that are
 * too deep for recursion.
 */
export function pathBeyondDepth(value: unknown, maxDepth: number): (string | number)[] | undefined {
  const stack: { container: object; path: (string | number)[] }[] = isContainer(value) ? [{ container: value, path: [] }] : [];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (next.path.length >= maxDepth) return next.path;
    const entries: [string | number, unknown][] = Array.isArray(next.container)
      ? [...next.container.entries()]
      : Object.entries(next.container);
    for (const [key, child] of entries) {
      if (isContainer(child)) stack.push({ container: child, path: [...next.path, key] });
    }
  }
  return undefined;
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/**
 * Replaces fastify's JSON body parser with the same parser (prototype-poisoning checks included) plus the
 * depth bound above, so that no route, present or future, receives a value deep enough to crash what walks it.
 * Too deep → 422 with the path where the bound was crossed (API-CONTRACT 1).
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
    parseJson(request, body, (error: Error | null, value?: unknown) => {
      if (error) return done(error, undefined);
      const tooDeep = pathBeyondDepth(value, MAX_JSON_BODY_DEPTH);
      if (tooDeep === undefined) return done(null, value);
      const msg = `JSON should nest at most ${MAX_JSON_BODY_DEPTH} levels deep`;
      done(new ValidationError([{ loc: ['body', ...tooDeep], msg, type: 'too_deep' }]), undefined);
    });
  });
}
