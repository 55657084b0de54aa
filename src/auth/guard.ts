import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../domain/errors.ts';
import { ADMIN_EMAIL, DEFAULT_TENANT, type Principal, type SatelliteVerifier, type Tenant } from '../domain/principal.ts';
import { requestHost } from '../http/client.ts';
import { isDevelopmentMode, isTrustedDevelopmentRequest } from '../http/development-mode.ts';
import type { AuthMode } from '../http/fastify-types.ts';
import { safeEqual } from '../security/compare.ts';
import type { TenantRepository } from '../tenants/repository.ts';
import type { UserRepository } from '../tenants/users-repository.ts';
import type { TokenIssuer } from './tokens.ts';

const TENANT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

type Credential = { kind: 'none' } | { kind: 'admin' } | { kind: 'jwt'; token: string };

export interface CredentialGuardDeps {
  config: Config;
  tokens: TokenIssuer;
  users: UserRepository;
  tenants: TenantRepository;
  /** Absent until a marketplace client is wired in: then only owner credentials can query. */
  satellites?: SatelliteVerifier;
  /** Which tenants' public URL has this host name (where the hub sends their consumers). */
  publicHosts?: { tenantIdsWithPublicHost(hostname: string): Promise<string[]> };
}

/**
 * Whether a request may register without the admin key (`POST /auth/register`, and what `GET /auth/setup`
 * tells the console): registration is open, and in development mode only to requests made on this machine.
 */
export function registrationOpenTo(config: Pick<Config, 'openRegistration' | 'developmentMode'>, request: FastifyRequest): boolean {
  return config.openRegistration && (!isDevelopmentMode(config) || isTrustedDevelopmentRequest(config, request));
}

export class CredentialGuard {
  constructor(private readonly deps: CredentialGuardDeps) {}

  private get developmentMode(): boolean {
    return isDevelopmentMode(this.deps.config);
  }

  async authenticate(request: FastifyRequest, mode: AuthMode): Promise<Principal | null> {
    if (mode === 'public') return null;
    const credential = this.credential(request);
    switch (mode) {
      case 'registration':
        await this.allowRegistration(request, credential);
        return null; // the new user's tenant is the one the body names
      case 'admin':
        return this.administrator(request, credential);
      case 'operator':
        if (this.isTrustedLocal(request, credential)) return this.adminPrincipal(request);
        await this.requireAdminKey(credential);
        return this.adminPrincipal(request);
      case 'user':
        return this.user(request, credential);
      case 'tenant':
        return this.tenantMember(request, credential);
      case 'query':
        return this.querier(request, credential);
    }
  }

  /** Development mode needs no credentials, but only from this machine: not through the tunnel, not from the network. */
  private isTrustedLocal(request: FastifyRequest, credential: Credential): boolean {
    return credential.kind === 'none' && isTrustedDevelopmentRequest(this.deps.config, request);
  }

  private async allowRegistration(request: FastifyRequest, credential: Credential): Promise<void> {
    if (registrationOpenTo(this.deps.config, request)) return;
    if (this.developmentMode && credential.kind === 'none') {
      throw new ForbiddenError('Registration is open only to requests made on this machine');
    }
    await this.requireAdminKey(credential);
  }

  private async administrator(request: FastifyRequest, credential: Credential): Promise<Principal> {
    if (this.isTrustedLocal(request, credential)) return this.adminPrincipal(request);
    if (this.developmentMode && credential.kind === 'jwt') return this.userPrincipal(request, credential.token);
    await this.requireAdminKey(credential);
    return this.adminPrincipal(request);
  }

  private async user(request: FastifyRequest, credential: Credential): Promise<Principal> {
    if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
    if (credential.kind === 'admin') throw new ForbiddenError('This operation needs a user token, not the admin key');
    return this.userPrincipal(request, credential.token);
  }

  private async tenantMember(request: FastifyRequest, credential: Credential): Promise<Principal> {
    if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
    if (credential.kind === 'admin') return this.adminPrincipal(request);
    return this.userPrincipal(request, credential.token);
  }

  private async querier(request: FastifyRequest, credential: Credential): Promise<Principal> {
    if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
    if (credential.kind === 'admin') return this.adminPrincipal(request);
    if (await this.deps.tokens.verify(credential.token)) return this.userPrincipal(request, credential.token);
    return this.satellitePrincipal(request, credential.token);
  }

  /**
   * Which tenant a satellite token may query (API-CONTRACT 6): the one `X-Tenant-Name` names; else those
   * whose public URL is the `Host` the consumer used; else any tenant whose marketplace account the token
   * was made for. The verifier then lets only those tenants' marketplaces vouch, and refuses to choose
   * between two tenants that both would.
   */
  private async satellitePrincipal(request: FastifyRequest, token: string): Promise<Principal> {
    const named = requestedTenant(request);
    let scope: string[] | undefined;
    if (named !== undefined) {
      const tenant = await this.deps.tenants.findByName(named);
      // No such tenant: no marketplace of it can vouch for the token.
      if (!tenant) throw new UnauthorizedError('Could not validate credentials');
      scope = [tenant.id];
    } else {
      const host = requestHost(request);
      const serving = host ? ((await this.deps.publicHosts?.tenantIdsWithPublicHost(host.hostname)) ?? []) : [];
      if (serving.length > 0) scope = serving;
    }
    const identity = this.deps.satellites ? await this.deps.satellites.verify(token, scope) : null;
    const tenant = identity && (await this.deps.tenants.findById(identity.tenantId));
    if (!identity || !tenant) throw new UnauthorizedError('Could not validate credentials');
    return { kind: 'satellite', email: identity.email, tenant };
  }

  /** Reads the bearer credential; the admin key is recognised in constant time. */
  private credential(request: FastifyRequest): Credential {
    const header = request.headers.authorization;
    if (!header) return { kind: 'none' };
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) return { kind: 'none' };
    const token = match[1];
    if (!this.developmentMode && safeEqual(token, this.deps.config.adminApiKey)) return { kind: 'admin' };
    return { kind: 'jwt', token };
  }

  /** The admin key itself; a valid user token is a credential without this permission, anything else none at all. */
  private async requireAdminKey(credential: Credential): Promise<void> {
    if (credential.kind === 'admin') return;
    if (credential.kind === 'none') throw new UnauthorizedError('Not authenticated');
    if (await this.deps.tokens.verify(credential.token)) throw new ForbiddenError();
    throw new UnauthorizedError('Could not validate credentials');
  }

  private async adminPrincipal(request: FastifyRequest): Promise<Principal> {
    const named = requestedTenant(request);
    if (named === undefined && this.deps.config.multiTenancy) {
      throw new ValidationError([{ loc: ['header', 'x-tenant-name'], msg: 'Field required', type: 'missing' }]);
    }
    const tenant = await this.deps.tenants.findByName(named ?? DEFAULT_TENANT);
    if (!tenant) throw new NotFoundError(`Tenant '${named}' not found`);
    return { kind: 'admin', email: ADMIN_EMAIL, tenant, tenantNamed: named !== undefined };
  }

  private async userPrincipal(request: FastifyRequest, token: string): Promise<Principal> {
    const claims = await this.deps.tokens.verify(token);
    const user = claims && (await this.deps.users.findById(claims.sub));
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
    const tenant = await this.deps.tenants.findByName(name);
    return tenant && (await this.deps.tenants.isMember(tenant.id, userId)) ? tenant : undefined;
  }
}

function requestedTenant(request: FastifyRequest): string | undefined {
  const value = request.headers['x-tenant-name'];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !TENANT_NAME_PATTERN.test(value)) {
    throw new ValidationError([{ loc: ['header', 'x-tenant-name'], msg: 'Not a valid tenant name', type: 'string_pattern_mismatch' }]);
  }
  return value;
}
