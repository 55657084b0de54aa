import { isUniqueViolation } from '../db/database.ts';
import { ConflictError } from '../domain/errors.ts';

/** Runs a write whose unique constraint says "already exists"; that case becomes a 409 with `detail`. */
export async function conflictAs<T>(detail: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError(detail);
    throw error;
  }
}
