import type { Database as SqliteDatabase } from 'bun:sqlite';
import { getLoadablePath } from 'sqlite-vec';
import { isCompiled } from '../runtime/compiled.ts';
import { extractedNativeLibrary } from '../runtime/native-library.ts';

/**
 * sqlite-vec's loadable extension (vec0.so) inside its npm package, for openDatabase to load before
 * anything reads the schema. bun:sqlite on Linux uses its own SQLite build, which allows extensions:
 * no Database.setCustomSQLite is needed.
 */
export function vectorExtensionPath(): string {
  if (!isCompiled) return getLoadablePath();
  // In the binary node_modules does not exist: the embedded vec0.so is written to the cache and loaded from there.
  return extractedNativeLibrary('vec0');
}

/** The loaded sqlite-vec's version, e.g. `v0.1.9` (for the provisioners view). */
export function vectorExtensionVersion(sqlite: SqliteDatabase): string {
  const row = sqlite.query('SELECT vec_version() AS version').get() as { version: string } | null;
  return row?.version ?? 'unknown';
}
