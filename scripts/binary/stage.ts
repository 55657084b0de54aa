import { chmodSync, cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Copies a build (knode and vendor/) into an empty folder, as a user unpacking a download would, and
 * returns the binary's path there. Nothing else of the checkout comes along.
 */
export function stageBinary(dist: string, into: string): string {
  const binary = join(dist, 'knode');
  const vendor = join(dist, 'vendor');
  for (const needed of [binary, vendor]) {
    if (!existsSync(needed)) throw new Error(`${needed} is missing: run npm run build first`);
  }
  mkdirSync(into, { recursive: true });
  cpSync(binary, join(into, 'knode'));
  chmodSync(join(into, 'knode'), 0o755);
  cpSync(vendor, join(into, 'vendor'), { recursive: true });
  return join(into, 'knode');
}
