import type { DbOrTransaction } from '../db/database.ts';
import { type Clock, isoNow, systemClock } from '../util/clock.ts';
import { USER_COLUMNS } from './codec.ts';

export interface User {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
}

export class UserRepository {
  constructor(
    private readonly db: DbOrTransaction,
    private readonly clock: Clock = systemClock,
  ) {}

  async create(email: string, passwordHash: string, db: DbOrTransaction = this.db): Promise<User> {
    const user = { id: crypto.randomUUID(), email, password_hash: passwordHash, created_at: isoNow(this.clock) };
    await db.insertInto('users').values(user).execute();
    return user;
  }

  async findByEmail(email: string): Promise<User | undefined> {
    return this.db.selectFrom('users').select(USER_COLUMNS).where('email', '=', email).executeTakeFirst();
  }

  async findById(id: string): Promise<User | undefined> {
    return this.db.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();
  }
}
