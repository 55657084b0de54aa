/** A tenant: the owner of every resource (specification, rule 1). */
export interface Tenant {
  id: string;
  name: string;
  created_at: string;
}

/** The tenant that admin-key requests use when they name none (API-CONTRACT 3). */
export const DEFAULT_TENANT = 'default';

/** Who is calling, and in which tenant they act: what every service receives instead of a request. */
export type Principal =
  /** `tenantNamed`: the request chose the tenant with X-Tenant-Name (else it is `default`). */
  | { kind: 'admin'; email: string; tenant: Tenant; tenantNamed: boolean }
  | { kind: 'user'; userId: string; email: string; tenant: Tenant }
  | { kind: 'satellite'; email: string; tenant: Tenant };

/** A marketplace user's identity, as the marketplace vouches for it. */
export interface SatelliteIdentity {
  email: string;
  /** The hub username of the endpoint owner the token was made for (its `aud`), when known. */
  audience?: string;
  /** The tenant whose marketplace vouched for the token: the only tenant the token may query. */
  tenantId: string;
}

/**
 * Checks satellite tokens with the marketplace that issued them. Answers null for a token that is not
 * valid (401); throws a ServiceUnavailableError when a marketplace that matters cannot be asked (503),
 * and a MisdirectedRequestError when the marketplaces of two tenants would both vouch (421).
 * `tenantIds` are the tenants the request points at (X-Tenant-Name, or the Host of their public URL):
 * only their marketplaces may vouch then; undefined lets any tenant's.
 */
export interface SatelliteVerifier {
  verify(token: string, tenantIds?: readonly string[]): Promise<SatelliteIdentity | null>;
}

/** The sender e-mail of requests made with the admin key (API-CONTRACT 6). */
export const ADMIN_EMAIL = 'admin@localhost';
