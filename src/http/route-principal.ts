import type { FastifyRequest } from 'fastify';
import type { Principal } from '../domain/principal.ts';

/** The caller of a route whose auth mode guarantees one (the guard has already run). */
export function requirePrincipal(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`route ${request.routeOptions.url} has no principal: is its auth mode public?`);
  return request.principal;
}

export function requireUser(request: FastifyRequest): Principal & { kind: 'user' } {
  const principal = requirePrincipal(request);
  if (principal.kind !== 'user') throw new Error(`route ${request.routeOptions.url} needs a user principal`);
  return principal;
}
