import type { Database } from 'bun:sqlite';
import type { OpenedDatabase } from '../db/database.ts';

/**
 * What has been paid with, in SQLite so that a restart forgets nothing (API-CONTRACT 10.3): challenge ids
 * and transaction hashes, each kept until its challenge expires (a credential is worthless after that).
 * Every operation is one synchronous bun:sqlite transaction on the one connection, so two requests can
 * never both claim a key; the settlement journal claims its keys in the same transaction as it writes its
 * row (`claimKeys`, `removeKeys`).
 */
export class ConsumedStore {
  private lastPrune = 0;

  constructor(private readonly database: OpenedDatabase) {}

  /** Whether any of the keys is consumed now. */
  async anyConsumed(keys: readonly string[]): Promise<boolean> {
    return this.database.exclusive((sqlite) => keys.some((key) => live(sqlite, key)));
  }

  /**
   * Marks every key consumed until `expiresAt` (ms since the epoch), unless one of them already is: then
   * nothing is written and the answer is false.
   */
  async claim(keys: readonly string[], expiresAt: number): Promise<boolean> {
    return this.database.exclusive((sqlite) => {
      this.prune(sqlite);
      return sqlite.transaction(() => claimKeys(sqlite, keys, expiresAt)).immediate();
    });
  }

  /** Forgets keys: what was claimed for a query that ended before anything was broadcast. */
  async release(keys: readonly string[]): Promise<void> {
    await this.database.exclusive((sqlite) => removeKeys(sqlite, keys));
  }

  /** Expired keys go, at most once a minute. */
  private prune(sqlite: Database): void {
    const now = Date.now();
    if (now - this.lastPrune < 60_000) return;
    this.lastPrune = now;
    sqlite.query('DELETE FROM payment_consumed WHERE expires_at IS NOT NULL AND expires_at <= ?').run(now);
  }
}

/** Inside a transaction: marks every key consumed until `expiresAt`, unless one already is (false). */
export function claimKeys(sqlite: Database, keys: readonly string[], expiresAt: number): boolean {
  if (keys.some((key) => live(sqlite, key))) return false;
  for (const key of keys) write(sqlite, key, expiresAt);
  return true;
}

export function removeKeys(sqlite: Database, keys: readonly string[]): void {
  const statement = sqlite.query('DELETE FROM payment_consumed WHERE key = ?');
  for (const key of keys) statement.run(key);
}

function live(sqlite: Database, key: string): boolean {
  const row = sqlite.query<{ expires_at: number | null }, [string]>('SELECT expires_at FROM payment_consumed WHERE key = ?').get(key);
  return row !== null && (row.expires_at === null || row.expires_at > Date.now());
}

function write(sqlite: Database, key: string, expiresAt: number): void {
  sqlite
    .query(
      'INSERT INTO payment_consumed (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
    )
    .run(key, '{"claimed":true}', expiresAt);
}
