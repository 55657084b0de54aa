import { conflictAs } from '../db/conflicts.ts';
import { type Db, inTransaction } from '../db/database.ts';
import { ConflictError, UnauthorizedError, ValidationError } from '../domain/errors.ts';
import type { Principal } from '../domain/principal.ts';
import { DEFAULT_TENANT } from '../domain/principal.ts';
import { passwordProblem } from '../security/password-rule.ts';
import { hashPassword, PASSWORD_HASH_COST, type PasswordHashCost, verifyAgainstNothing, verifyPassword } from '../security/passwords.ts';
import type { TenantRepository } from '../tenants/repository.ts';
import type { UserRepository } from '../tenants/users-repository.ts';
import { ACCESS_TOKEN_SECONDS, type TokenIssuer } from './tokens.ts';

export interface RegisteredUser {
  id: string;
  email: string;
  tenant_name: string;
  created_at: string;
}

export class AuthService {
  constructor(
    private readonly db: Db,
    private readonly users: UserRepository,
    private readonly tenants: TenantRepository,
    private readonly tokens: TokenIssuer,
    /** Argon2id's cost for new passwords: PASSWORD_HASH_COST unless a test lowers it (security/passwords.ts). */
    private readonly passwordHashCost: PasswordHashCost = PASSWORD_HASH_COST,
  ) {}

  /** Creates the user and a new tenant it owns, together or not at all. */
  async register(email: string, password: string, tenantName: string): Promise<RegisteredUser> {
    const problem = passwordProblem(password);
    if (problem) throw ValidationError.body('password', problem, 'password_too_weak');
    const normalizedEmail = email.trim().toLowerCase();
    if (await this.users.findByEmail(normalizedEmail)) {
      throw new ConflictError('A user with this email already exists');
    }
    if (tenantName.toLowerCase() === DEFAULT_TENANT || (await this.tenants.findByName(tenantName))) {
      throw new ConflictError(`Tenant '${tenantName}' already exists`);
    }
    const passwordHash = await hashPassword(password, this.passwordHashCost);
    // Another registration may win the race between the checks above and the insert.
    return conflictAs('A user with this email or tenant already exists', () =>
      inTransaction(this.db, async (trx) => {
        const user = await this.users.create(normalizedEmail, passwordHash, trx);
        const tenant = await this.tenants.create(tenantName, trx);
        await this.tenants.addMember(tenant.id, user.id, 'owner', trx);
        return { id: user.id, email: user.email, tenant_name: tenant.name, created_at: user.created_at };
      }),
    );
  }

  /** Whether anyone has registered yet (the console's first run offers the owner's account until then). */
  async hasUsers(): Promise<boolean> {
    return (await this.tenants.firstOwnersTenantId()) !== undefined;
  }

  async login(email: string, password: string) {
    const user = await this.users.findByEmail(email.trim().toLowerCase());
    const valid = user ? await verifyPassword(password, user.password_hash) : await verifyAgainstNothing(password, this.passwordHashCost);
    if (!user || !valid) throw new UnauthorizedError('Incorrect email or password');
    const tenant = await this.homeTenant(user.id);
    const accessToken = await this.tokens.issue({ sub: user.id, email: user.email, tenant_name: tenant });
    return { access_token: accessToken, token_type: 'bearer' as const, expires_in: ACCESS_TOKEN_SECONDS };
  }

  /** The tenant a user's token names by default: the one it owns, else the first it joined. */
  private async homeTenant(userId: string): Promise<string> {
    const row = await this.db
      .selectFrom('tenant_members')
      .innerJoin('tenants', 'tenants.id', 'tenant_members.tenant_id')
      .select('tenants.name')
      .where('tenant_members.user_id', '=', userId)
      .orderBy('tenant_members.role', 'desc') // 'owner' before 'member'
      .orderBy('tenant_members.created_at')
      .orderBy('tenants.name') // joined in the same millisecond: one answer, always the same
      .executeTakeFirst();
    if (!row) throw new UnauthorizedError('Incorrect email or password');
    return row.name;
  }

  async me(principal: Principal & { kind: 'user' }) {
    const user = await this.users.findById(principal.userId);
    if (!user) throw new UnauthorizedError('Could not validate credentials');
    return { email: user.email, tenant_name: principal.tenant.name, created_at: user.created_at };
  }
}
