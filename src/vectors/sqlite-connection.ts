import type { Database as SqliteDatabase } from 'bun:sqlite';
import type { OpenedDatabase } from '../db/database.ts';
import { nextTurn } from '../util/next-turn.ts';
import type { FencingLease } from './store.ts';

/**
 * The SQLite store's one way to the database: all work runs synchronously on the one connection (through
 * `exclusive`), so a read sees one consistent state; a write is one short transaction, timed, started in
 * an event-loop turn of its own, so that requests get in between two writes (util/next-turn.ts). A write
 * made under a dataset's lease is refused inside its transaction once the lease is lost (store.ts, FencingLease).
 */
export class StoreConnection {
  private longestWrite = 0;

  constructor(private readonly opened: OpenedDatabase) {}

  /** The longest write transaction so far, in milliseconds. */
  get longestWriteMs(): number {
    return this.longestWrite;
  }

  read<T>(work: (sqlite: SqliteDatabase) => T): Promise<T> {
    return this.opened.exclusive(work);
  }

  async write<T>(work: (sqlite: SqliteDatabase) => T, lease?: FencingLease): Promise<T> {
    await nextTurn();
    return this.opened.exclusive((sqlite) => {
      const started = performance.now();
      try {
        return sqlite
          .transaction(() => {
            // A single node's lease (LocalLeases) is lost only when released here: its fence is this check.
            lease?.signal.throwIfAborted();
            return work(sqlite);
          })
          .immediate();
      } finally {
        this.longestWrite = Math.max(this.longestWrite, performance.now() - started);
      }
    });
  }
}
