import type { Database as SqliteDatabase } from 'bun:sqlite';
import { getLoadablePath } from 'sqlite-vec';

/**
 * sqlite-vec's loadable extension (vec0.so) inside its npm package, for openDatabase to load before
 * anything reads the schema. bun:sqlite on Linux uses its own SQLite build, which allows extensions:
 * no Database.setCustomSQLite is needed. The compiled binary passes the copy it extracted instead.
 */
export function vectorExtensionPath(): string {
  return getLoadablePath();
}

/** The loaded sqlite-vec's version, e.g. `v0.1.9` (for the provisioners view). */
export function vectorExtensionVersion(sqlite: SqliteDatabase): string {
  const row = sqlite.query('SELECT vec_version() AS version').get() as { version: string } | null;
  return row?.version ?? 'unknown';
}
