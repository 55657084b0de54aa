import type { Tenant } from '../tenants/repository.ts';

/** Who is calling, and in which tenant they act: what every service receives instead of a request. */
export type Principal =
  | { kind: 'admin'; email: string; tenant: Tenant }
  | { kind: 'user'; userId: string; email: string; tenant: Tenant };

/** The sender e-mail of requests made with the admin key (API-CONTRACT 6). */
export const ADMIN_EMAIL = 'admin@localhost';
