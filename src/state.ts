import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { TokenIssuer } from './auth/tokens.ts';
import type { Config } from './config.ts';
import { type OpenedDatabase, openDatabase } from './db/database.ts';
import { type FixedWindows, SqliteFixedWindows } from './db/fixed-windows.ts';
import { openPostgresDatabase } from './db/postgres/database.ts';
import { PostgresFixedWindows } from './db/postgres/fixed-windows.ts';
import { loadOrCreateKey } from './security/key-file.ts';
import { SecretBox } from './security/secret-box.ts';
import type { Clock } from './util/clock.ts';
import { vectorExtensionPath, vectorExtensionVersion } from './vectors/extension.ts';
import { PgvectorMissingError } from './vectors/postgres/pgvector.ts';
import { PostgresVectorStore } from './vectors/postgres/store.ts';
import { SqliteVectorStore } from './vectors/sqlite-store.ts';
import type { SearchEngine, VectorStore } from './vectors/store.ts';

/*
 * Where knode keeps what it knows: SQLite in the data folder (the default), or PostgreSQL shared by every
 * replica (cluster mode, SVC_DATABASE_URL), with what depends on that choice. Part of the wiring (services.ts).
 */

/** Where the state lives, and what depends on the engine: the counters, the vector store, the two keys. */
export interface State {
  readonly database: OpenedDatabase;
  readonly windows: FixedWindows;
  readonly store: VectorStore;
  readonly searchEngine: SearchEngine;
  readonly box: SecretBox;
  readonly tokens: TokenIssuer;
  close(): Promise<void>;
}

/**
 * The embedded SQLite database in the data folder, with the keys kept beside it; or, in cluster mode,
 * PostgreSQL shared by every replica, with the keys from the environment (config.ts requires both there).
 */
export async function openState(config: Config, clock: Clock): Promise<State> {
  if (config.databaseUrl === undefined) {
    const database = await openDatabase(config.dataDir, [vectorExtensionPath()]);
    return {
      database,
      windows: new SqliteFixedWindows(database, clock),
      store: new SqliteVectorStore(database, clock),
      searchEngine: {
        vectorStore: 'sqlite-vec',
        vectorStoreVersion: await database.exclusive(vectorExtensionVersion),
        keywordIndex: 'SQLite FTS5',
        vectorsMissing: undefined,
      },
      box: new SecretBox(loadOrCreateKey(join(config.dataDir, 'secret.key'), 32)),
      tokens: new TokenIssuer(config.jwtSecret ?? loadOrCreateKey(join(config.dataDir, 'jwt.key'), 32), clock),
      close: () => database.close(),
    };
  }
  if (config.jwtSecret === undefined || config.secretKey === undefined) throw new Error('cluster mode needs both keys (config.ts)');
  // The data folder still holds what each machine keeps for itself: model files and the embedders' cache.
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const postgres = await openPostgresDatabase(config.databaseUrl);
  try {
    const store = await PostgresVectorStore.open(postgres.db, clock);
    const database: OpenedDatabase = {
      db: postgres.db,
      exclusive: () => Promise.reject(new Error('cluster mode has no SQLite connection')),
      close: postgres.close,
    };
    return {
      database,
      windows: new PostgresFixedWindows(postgres.db, clock),
      store,
      searchEngine: {
        vectorStore: 'pgvector',
        vectorStoreVersion: store.pgvectorVersion ?? 'none',
        keywordIndex: 'PostgreSQL BM25',
        vectorsMissing: store.vectorsMissing === undefined ? undefined : new PgvectorMissingError(store.vectorsMissing).message,
      },
      box: new SecretBox(config.secretKey),
      tokens: new TokenIssuer(config.jwtSecret, clock),
      close: postgres.close,
    };
  } catch (error) {
    await postgres.close();
    throw error;
  }
}
