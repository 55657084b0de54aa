import type { Database as SqliteDatabase } from 'bun:sqlite';
import { addVectors, filesToEmbed as filesWaiting, readRows, visibleSet } from './chunk-sets.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import type { EmbeddingProgress, ReadLimits, UnembeddedChunks, VectorPart } from './store.ts';
import { type DatasetTables, datasetTables } from './tables.ts';
import { writeVectorSlices } from './vector-slices.ts';

/**
 * Phase 2 of a file in the SQLite store: which files' visible chunks still wait for vectors, their next
 * chunks read back a window at a time, and their vectors written in order (a set's first `embedded` chunks
 * have one, chunk-sets.ts), so a restart resumes where the vectors stop.
 */

/**
 * The most vectors one write transaction takes: sqlite-vec inserts one in about 0.2 ms, so a window of
 * the embedding lane (256) is written in four transactions of about 12 ms, with requests answered between.
 */
const VECTOR_ROWS = 64;

/** Files whose visible chunks still wait for vectors, in the order they became searchable. */
export async function filesToEmbed(connection: StoreConnection, datasetId: string): Promise<string[]> {
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => filesWaiting(sqlite, tables));
}

/**
 * The next chunks without a vector of each file, from row `from` on (undefined: from its first one without
 * a vector), in order until `limits` are reached (later files are left out of the answer); undefined for a
 * file that has no visible chunks any more.
 */
export async function unembeddedOf(
  connection: StoreConnection,
  datasetId: string,
  files: readonly { fileKey: string; from: number | undefined }[],
  limits: ReadLimits,
): Promise<(UnembeddedChunks | undefined)[]> {
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => {
    const answers: (UnembeddedChunks | undefined)[] = [];
    let { texts, characters } = limits;
    for (const { fileKey, from } of files) {
      if (texts <= 0 || characters <= 0) break;
      const answer = unembeddedOfFile(sqlite, tables, fileKey, from, { texts, characters });
      answers.push(answer);
      const rows = answer?.rows ?? [];
      texts -= rows.length;
      for (const row of rows) characters -= row.content.length;
    }
    return answers;
  });
}

/** One file's next chunks without a vector within `limits`; undefined when it has no visible chunks any more. */
function unembeddedOfFile(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  fileKey: string,
  from: number | undefined,
  limits: ReadLimits,
): UnembeddedChunks | undefined {
  const set = visibleSet(sqlite, tables, fileKey);
  if (!set) return undefined;
  const start = Math.max(from ?? 0, set.firstRow + set.embedded);
  const rows = start > set.lastRow ? [] : readRows(sqlite, start, set.lastRow, limits);
  return { from: start, rows, last: (rows.at(-1)?.rowid ?? start - 1) >= set.lastRow };
}

/**
 * The vectors of several files (a window of the embedding lane), in transactions of at most VECTOR_ROWS
 * vectors: each commits its vectors with the count of them, so a crash loses none it wrote. Undefined for
 * a part whose chunks are no longer the file's visible ones.
 */
export async function addVectorsOf(
  connection: StoreConnection,
  datasetId: string,
  parts: readonly VectorPart[],
): Promise<(EmbeddingProgress | undefined)[]> {
  const tables = datasetTables(datasetId);
  return writeVectorSlices(parts, VECTOR_ROWS, (slice) =>
    connection.write((sqlite) => {
      const index = requireIndex(sqlite, tables);
      const answers = new Map<number, EmbeddingProgress | undefined>();
      for (const { part, fileKey, from, vectors } of slice) {
        const set = addVectors(sqlite, tables, index.dimension, fileKey, from, vectors);
        answers.set(part, set && { embedded: set.embedded, count: set.count });
      }
      return answers;
    }),
  );
}
