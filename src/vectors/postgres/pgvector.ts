import { ServiceUnavailableError } from '../../domain/errors.ts';
import type { Query } from './connection.ts';

/**
 * pgvector in the database: whether the server has it (Debian 12's packaged PostgreSQL does not, and npm
 * ships none; every managed PostgreSQL does), and how a vector is written for it. A store on a server
 * without it still indexes and searches keywords; what needs vectors fails with PgvectorMissingError, whose
 * message a caller can show as it is (a domain error of kind `unavailable`: a route answers 503 with it).
 */

export class PgvectorMissingError extends ServiceUnavailableError {
  override readonly name = 'PgvectorMissingError';
  constructor(detail?: string) {
    super(`this PostgreSQL server lacks the pgvector extension${detail ? ` (${detail})` : ''}: vector and hybrid search need it`);
  }
}

export interface PgvectorSupport {
  /** The extension's version in this database, undefined when it cannot be had. */
  readonly version?: string;
  /** Why it cannot be had (for the error and the log). */
  readonly missing?: string;
}

/** The oldest pgvector with halfvec and HNSW on it. */
const MINIMUM_VERSION = [0, 7];

/**
 * Creates the extension in the database when the server has it and it is not there yet (the database's
 * owner may; a managed server allows it), and says which version is there.
 */
export async function ensurePgvector(query: Query): Promise<PgvectorSupport> {
  const installed = async () =>
    (await query<{ version: string }>(`SELECT extversion AS version FROM pg_extension WHERE extname = 'vector'`))[0];
  const found = (await installed()) ?? (await createPgvector(query, installed));
  if ('missing' in found) return found;
  const [major = 0, minor = 0] = found.version.split('.').map(Number);
  if (major < (MINIMUM_VERSION[0] as number) || (major === MINIMUM_VERSION[0] && minor < (MINIMUM_VERSION[1] as number))) {
    return { missing: `version ${found.version} is older than ${MINIMUM_VERSION.join('.')}` };
  }
  return { version: found.version };
}

/** Creates the extension when the server has it: the version then installed, or why it is missing. */
async function createPgvector(
  query: Query,
  installed: () => Promise<{ version: string } | undefined>,
): Promise<{ version: string } | { missing: string }> {
  const available = await query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`);
  if (available.length === 0) return { missing: 'not installed on the server' };
  try {
    await query('CREATE EXTENSION IF NOT EXISTS vector');
  } catch (error) {
    // Two replicas creating it at once: one wins, the other finds it. Otherwise a missing privilege.
    if (!(await installed()))
      return { missing: `CREATE EXTENSION vector failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  return (await installed()) ?? { missing: 'not created in this database' };
}

/**
 * The column type of a dataset's vectors: `vector` (4-byte floats) up to 2,000 dimensions, the most an
 * HNSW index on it takes; `halfvec` (2-byte floats) above, whose HNSW index takes up to 4,000 (above that
 * the vectors are scanned exactly). Scores then differ from the SQLite store's by the half floats' rounding.
 */
export function vectorType(dimension: number): 'vector' | 'halfvec' {
  return dimension > 2000 ? 'halfvec' : 'vector';
}

/** The largest dimension an HNSW index takes for the column type vectorType chooses. */
export function hasHnswIndex(dimension: number): boolean {
  return dimension <= 4000;
}

/**
 * A vector as pgvector's text form. JavaScript prints the float32 values' exact decimal (as doubles), which
 * pgvector reads back to the same float32.
 */
export function vectorLiteral(vector: Float32Array): string {
  return `[${Array.prototype.join.call(vector, ',')}]`;
}
