import type { AuthMode } from '../auth/guard.ts';
import type { Principal } from '../domain/principal.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (see AuthMode); routes without it are public. */
    auth?: AuthMode;
    /** false for routes the general API limits do not count (health). */
    counted?: boolean;
    /** true for the one route that also takes an HTML form body (`/auth/login`, as OAuth2 password clients send it). */
    forms?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}
