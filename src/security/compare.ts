import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares two secrets in time independent of where they differ. Hashing first gives equal-length
 * inputs, so the comparison does not leak the expected length either.
 */
export function safeEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
