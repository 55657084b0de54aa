import { ConflictError } from '../domain/errors.ts';
import { isUniqueViolation } from './database.ts';

/**
 * Runs a write whose unique constraint says "already exists"; that case becomes a ConflictError (409)
 * with `detail`. The one way a unique violation becomes a conflict: any other one is a bug, and a 500.
 */
export async function conflictAs<T>(detail: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError(detail);
    throw error;
  }
}
