import type { FastifyRequest } from 'fastify';
import { ADMIN_EMAIL, type Principal, type SatelliteVerifier } from '../auth/principal.ts';
import type { UserRepository } from '../auth/repository.ts';
import type { TokenIssuer } from '../auth/tokens.ts';
import type { Config } from '../config.ts';
import { safeEqual } from '../security/compare.ts';
import { DEFAULT_TENANT, type Tenant, type TenantRepository } from '../tenants/repository.ts';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from './errors.ts';

/**
 * What a route demands of its caller:
 * - public: nothing;
 * - registration: nothing while registration is open, else the admin key;
 * - tenant: a local JWT or the admin key (management routes);
 * - user: a local JWT (the caller's own account);
 * - admin: the admin key, or nothing in development mode (settings);
 * - query: a satellite token, or the owner's credentials (a local JWT or the admin key).
 */
export type AuthMode = 'public' | 'registration' | 'tenant' | 'user' | 'admin' | 'query';

export const TENANT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

type Credential = { kind: 'none' } | { kind: 'admin' } | { kind: 'jwt'; token: string };

export class CredentialGuard {
  constructor(
    private readonly config: Config,
    private readonly tokens: TokenIssuer,
    private readonly users: UserRepository,
    private readonly tenants: TenantRepository,
    /** Absent until a marketplace client is wired in: then only owner credentials can query. */
    private readonly satellites?: SatelliteVerifier,
    /** The tenant whose marketplace account has this hub username (a satellite token's audience). */
    private readonly tenantForAudience?: (audience: string) => Promise<Tenant | undefined>,
  ) {}

  private get developmentMode(): boolean {
    return this.config.adminApiKey === '';
  }

  async authenticate(request: FastifyRequest, mode: AuthMode): Promise<Principal | null> {
    if (mode === 'public') return null;
    const credential = this.credential(request);
    switch (mode) {
      case 'registration':
        if (this.config.openRegistration) return null;
        return this.requireAdmin(request, credential);
      case 'admin':
        if (this.developmentMode && credential.kind === 'none') return this.adminPrincipal(request);
        if (this.developmentMode && credential.kind === 'jwt') return this.userPrincipal(request, credential.token);
        return this.requireAdmin(request, credential);
      case 'user':
        if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
        if (credential.kind === 'admin') throw new ForbiddenError('This operation needs a user token, not the admin key');
        return this.userPrincipal(request, credential.token);
      case 'tenant':
        if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
        if (credential.kind === 'admin') return this.adminPrincipal(request);
        return this.userPrincipal(request, credential.token);
      case 'query':
        if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
        if (credential.kind === 'admin') return this.adminPrincipal(request);
        if (await this.tokens.verify(credential.token)) return this.userPrincipal(request, credential.token);
        return this.satellitePrincipal(request, credential.token);
    }
  }

  private async satellitePrincipal(request: FastifyRequest, token: string): Promise<Principal> {
    const named = requestedTenant(request);
    let tenant = named === undefined ? undefined : await this.tenants.findByName(named);
    const identity = this.satellites ? await this.satellites.verify(token, tenant ? { tenantId: tenant.id } : {}) : null;
    if (!identity) throw new UnauthorizedError('Could not validate credentials');
    // Only a caller with a good token learns that a tenant does not exist.
    if (named !== undefined && !tenant) throw new NotFoundError(`Tenant '${named}' not found`);
    // The tenant whose marketplace vouched for the token, else the audience's, else `default`.
    tenant ??=
      (identity.tenantId && (await this.tenants.findById(identity.tenantId))) ||
      (identity.audience && (await this.tenantForAudience?.(identity.audience))) ||
      (await this.tenants.findByName(DEFAULT_TENANT));
    if (!tenant) throw new NotFoundError('No tenant serves this token');
    return { kind: 'satellite', email: identity.email, tenant };
  }

  /** Reads the bearer credential; the admin key is recognised in constant time. */
  private credential(request: FastifyRequest): Credential {
    const header = request.headers.authorization;
    if (!header) return { kind: 'none' };
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) return { kind: 'none' };
    const token = match[1];
    if (!this.developmentMode && safeEqual(token, this.config.adminApiKey)) return { kind: 'admin' };
    return { kind: 'jwt', token };
  }

  private async requireAdmin(request: FastifyRequest, credential: Credential): Promise<Principal> {
    if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
    if (credential.kind === 'admin') return this.adminPrincipal(request);
    // A valid user token is a credential without this permission; anything else is not a credential at all.
    if (await this.tokens.verify(credential.token)) throw new ForbiddenError();
    throw new UnauthorizedError('Could not validate credentials');
  }

  private async adminPrincipal(request: FastifyRequest): Promise<Principal> {
    const named = requestedTenant(request);
    if (named === undefined && this.config.multiTenancy) {
      throw new ValidationError([{ loc: ['header', 'x-tenant-name'], msg: 'Field required', type: 'missing' }]);
    }
    const tenant = await this.tenants.findByName(named ?? DEFAULT_TENANT);
    if (!tenant) throw new NotFoundError(`Tenant '${named}' not found`);
    return { kind: 'admin', email: ADMIN_EMAIL, tenant };
  }

  private async userPrincipal(request: FastifyRequest, token: string): Promise<Principal> {
    const claims = await this.tokens.verify(token);
    const user = claims && (await this.users.findById(claims.sub));
    if (!claims || !user) throw new UnauthorizedError('Could not validate credentials');
    const named = requestedTenant(request);
    const tenant = await this.memberTenant(user.id, named ?? claims.tenant_name);
    if (!tenant) {
      if (named !== undefined) throw new ForbiddenError();
      throw new UnauthorizedError('Could not validate credentials');
    }
    return { kind: 'user', userId: user.id, email: user.email, tenant };
  }

  private async memberTenant(userId: string, name: string): Promise<Tenant | undefined> {
    const tenant = await this.tenants.findByName(name);
    return tenant && (await this.tenants.isMember(tenant.id, userId)) ? tenant : undefined;
  }
}

function requestedTenant(request: FastifyRequest): string | undefined {
  const value = request.headers['x-tenant-name'];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !TENANT_NAME_PATTERN.test(value)) {
    throw new ValidationError([
      { loc: ['header', 'x-tenant-name'], msg: 'Not a valid tenant name', type: 'string_pattern_mismatch' },
    ]);
  }
  return value;
}
