import type { EmbeddingProgress, ReadLimits, UnembeddedChunks, VectorPart } from '../store.ts';
import { writeVectorSlices } from '../vector-slices.ts';
import { addVectors, filesWaitingForVectors, readRows, requireIndex, visibleSet } from './chunk-sets.ts';
import type { PostgresConnection, Query } from './connection.ts';
import { type PostgresTables, postgresTables } from './dataset-tables.ts';
import { PgvectorMissingError } from './pgvector.ts';

/**
 * Phase 2 of a file in the PostgreSQL store, as in the SQLite one (../sqlite-vector-progress.ts): which
 * files' visible chunks still wait for vectors, their next chunks read back a window at a time, and their
 * vectors written in order, each transaction with their count, so a restart resumes where they stop.
 */

/**
 * The most vectors one write transaction takes. PostgreSQL's writes do not hold the thread that answers
 * requests (the SQLite store's reason for 64); an HNSW insert costs about a millisecond at 512 dimensions.
 */
const VECTOR_ROWS = 128;

export async function filesToEmbed(connection: PostgresConnection, datasetId: string): Promise<string[]> {
  const tables = postgresTables(datasetId);
  return connection.read((query) => filesWaitingForVectors(query, tables));
}

export async function unembeddedOf(
  connection: PostgresConnection,
  datasetId: string,
  files: readonly { fileKey: string; from: number | undefined }[],
  limits: ReadLimits,
): Promise<(UnembeddedChunks | undefined)[]> {
  const tables = postgresTables(datasetId);
  return connection.read(async (query) => {
    const answers: (UnembeddedChunks | undefined)[] = [];
    let { texts, characters } = limits;
    for (const { fileKey, from } of files) {
      if (texts <= 0 || characters <= 0) break;
      const answer = await unembeddedOfFile(query, tables, fileKey, from, { texts, characters });
      answers.push(answer);
      const rows = answer?.rows ?? [];
      texts -= rows.length;
      for (const row of rows) characters -= row.content.length;
    }
    return answers;
  });
}

/** One file's next chunks without a vector within `limits`; undefined when it has no visible chunks any more. */
async function unembeddedOfFile(
  query: Query,
  tables: PostgresTables,
  fileKey: string,
  from: number | undefined,
  limits: ReadLimits,
): Promise<UnembeddedChunks | undefined> {
  const set = await visibleSet(query, tables, fileKey);
  if (!set) return undefined;
  const start = Math.max(from ?? 0, set.firstRow + set.embedded);
  const rows = start > set.lastRow ? [] : await readRows(query, tables, start, set.lastRow, limits);
  return { from: start, rows, last: (rows.at(-1)?.rowid ?? start - 1) >= set.lastRow };
}

export async function addVectorsOf(
  connection: PostgresConnection,
  datasetId: string,
  parts: readonly VectorPart[],
  vectorsMissing: string | undefined,
): Promise<(EmbeddingProgress | undefined)[]> {
  if (vectorsMissing !== undefined) throw new PgvectorMissingError(vectorsMissing);
  const tables = postgresTables(datasetId);
  return writeVectorSlices(parts, VECTOR_ROWS, (slice) =>
    connection.write(async (query) => {
      const index = await requireIndex(query, tables);
      const answers = new Map<number, EmbeddingProgress | undefined>();
      for (const { part, fileKey, from, vectors } of slice) {
        const set = await addVectors(query, tables, index.dimension, fileKey, from, vectors);
        answers.set(part, set && { embedded: set.embedded, count: set.count });
      }
      return answers;
    }),
  );
}
