import type { Database } from 'bun:sqlite';
import type { Store } from 'mppx';
import type { OpenedDatabase } from '../db/database.ts';

/**
 * What has been paid with, in SQLite so that a restart forgets nothing (API-CONTRACT 10.3): challenge ids
 * and transaction hashes, each kept until its challenge expires (a credential is worthless after that).
 * It is also the replay store mppx's Tempo charge writes its own marks to (`store` option), through the
 * atomic `update`/`tryClaim` it asks for. Every operation is one synchronous bun:sqlite transaction on the
 * one connection, so two requests can never both claim a key.
 */
export class ConsumedStore {
  private lastPrune = 0;

  constructor(private readonly database: OpenedDatabase) {}

  /**
   * The store mppx is given: its keys are its own, beside knode's. The keys it claims are added to
   * `claimed`, so that a broadcast the node never took can free them as well as knode's.
   */
  mppx(claimed: string[] = []): Store.AtomicStore {
    return {
      get: async (key) => this.database.exclusive((sqlite) => read(sqlite, key)),
      put: async (key, value) => {
        await this.database.exclusive((sqlite) => write(sqlite, key, value));
      },
      delete: async (key) => {
        await this.database.exclusive((sqlite) => remove(sqlite, [key]));
      },
      update: async (key, fn) =>
        this.database.exclusive((sqlite) =>
          sqlite
            .transaction(() => {
              const change = fn(read(sqlite, key) as never);
              if (change.op === 'set') write(sqlite, key, change.value);
              else if (change.op === 'delete') remove(sqlite, [key]);
              return change.result;
            })
            .immediate(),
        ),
      tryClaim: async (key, expires) => {
        const won = await this.claim([key], expires);
        if (won) claimed.push(key);
        return won;
      },
    };
  }

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
      return sqlite
        .transaction(() => {
          if (keys.some((key) => live(sqlite, key))) return false;
          for (const key of keys) write(sqlite, key, { claimed: true }, expiresAt);
          return true;
        })
        .immediate();
    });
  }

  /** Forgets keys: what was claimed for a query that ended before anything was broadcast. */
  async release(keys: readonly string[]): Promise<void> {
    await this.database.exclusive((sqlite) => remove(sqlite, keys));
  }

  /** Expired keys go, at most once a minute. */
  private prune(sqlite: Database): void {
    const now = Date.now();
    if (now - this.lastPrune < 60_000) return;
    this.lastPrune = now;
    sqlite.query('DELETE FROM payment_consumed WHERE expires_at IS NOT NULL AND expires_at <= ?').run(now);
  }
}

function live(sqlite: Database, key: string): boolean {
  const row = sqlite.query<{ expires_at: number | null }, [string]>('SELECT expires_at FROM payment_consumed WHERE key = ?').get(key);
  return row !== null && (row.expires_at === null || row.expires_at > Date.now());
}

function read(sqlite: Database, key: string): unknown {
  const row = sqlite
    .query<{ value: string; expires_at: number | null }, [string]>('SELECT value, expires_at FROM payment_consumed WHERE key = ?')
    .get(key);
  if (!row || (row.expires_at !== null && row.expires_at <= Date.now())) return null;
  return JSON.parse(row.value);
}

/** mppx's replay markers carry their expiry (`{expires, type}`); other values are kept until deleted. */
function write(sqlite: Database, key: string, value: unknown, expiresAt?: number): void {
  const expires =
    expiresAt ??
    (typeof value === 'object' && value !== null && 'expires' in value && typeof value.expires === 'number' ? value.expires : null);
  sqlite
    .query(
      'INSERT INTO payment_consumed (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
    )
    .run(
      key,
      JSON.stringify(value, (_key, item) => (typeof item === 'bigint' ? item.toString() : item)),
      expires,
    );
}

function remove(sqlite: Database, keys: readonly string[]): void {
  const statement = sqlite.query('DELETE FROM payment_consumed WHERE key = ?');
  for (const key of keys) statement.run(key);
}
