import type { Principal } from '../domain/principal.ts';

/**
 * What a route demands of its caller:
 * - public: nothing;
 * - registration: nothing while registration is open (in development mode: to direct local requests only), else the admin key;
 * - tenant: a local JWT or the admin key (management routes);
 * - user: a local JWT (the caller's own account);
 * - admin: the admin key; in development mode a user's JWT (for its own tenant), or nothing from this machine (settings);
 * - operator: the admin key, or nothing from this machine in development mode; never a user's JWT (granting folders);
 * - query: a satellite token, or the owner's credentials (a local JWT or the admin key).
 */
export type AuthMode = 'public' | 'registration' | 'tenant' | 'user' | 'admin' | 'operator' | 'query';

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
