import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * Reads a random key kept in the data directory, creating it (mode 0600) on first use, so that secrets
 * encrypted and tokens signed before a restart stay readable after it.
 */
export function loadOrCreateKey(path: string, bytes: number): Buffer {
  if (existsSync(path)) {
    const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64');
    if (key.length !== bytes) throw new Error(`${path} is damaged: expected a ${bytes}-byte base64 key`);
    chmodSync(path, 0o600);
    return key;
  }
  const key = randomBytes(bytes);
  // 'wx' fails if another process created it meanwhile, rather than overwriting its key.
  writeFileSync(path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  return key;
}
