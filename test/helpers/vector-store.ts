/**
 * What the vector store's tests (and benches) ask of it that knode itself never does: a file's chunks
 * replaced or deleted in one call, one file's vectors read and written, a dataset's index row. Each is made
 * of the store's own operations (stage, publish, retireFile, unembeddedOf, addVectorsOf), so it exercises
 * what production runs; only `indexInfo` reads the SQLite store's table directly.
 */
import type { OpenedDatabase } from '../../src/db/database.ts';
import { readIndex } from '../../src/vectors/sqlite-index.ts';
import type { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import type { ChunkText, EmbeddingProgress, ReadLimits, StagedFile, UnembeddedChunks, VectorStore } from '../../src/vectors/store.ts';
import { datasetTables } from '../../src/vectors/tables.ts';

/** A file's chunks with their vectors, written at once (replaceFileChunks). */
export interface ChunkInput extends ChunkText {
  readonly embedding: Float32Array;
}

export interface IndexInfo {
  readonly dimension: number;
  readonly chunkCount: number;
}

/** A store whose hidden chunks can be waited for (the SQLite one). */
type CollectingStore = VectorStore & Pick<SqliteVectorStore, 'collectGarbage'>;

/**
 * Replaces every chunk of one file (`fileKey`, e.g. its relative path) with `chunks`: staged, then
 * published at once, so a search sees the old chunks or the new ones, never a mix or neither; the old ones
 * are deleted before this returns. Returns the ids.
 */
export async function replaceFileChunks(
  store: CollectingStore,
  datasetId: string,
  fileKey: string,
  chunks: readonly ChunkInput[],
): Promise<string[]> {
  const rows = chunks.map((chunk) => ({ ...chunk, id: chunk.id ?? crypto.randomUUID() }));
  let staged: StagedFile | undefined;
  try {
    staged = await store.stage(datasetId, fileKey, { count: rows.length, chunk: (i) => rows[i] as ChunkText });
    if (!(await store.publish(staged))) throw new Error(`the chunks of ${fileKey} were deleted while they were written`);
  } finally {
    if (staged) await store.discard(staged);
    await store.collectGarbage();
  }
  return rows.map((row) => row.id);
}

/** Removes every chunk of one file: hidden at once, deleted before this returns. Returns how many there were. */
export async function deleteFileChunks(store: CollectingStore, datasetId: string, fileKey: string): Promise<number> {
  const hidden = await store.retireFile(datasetId, fileKey);
  await store.collectGarbage();
  return hidden;
}

/** `unembeddedOf` for one file. */
export async function unembedded(
  store: VectorStore,
  datasetId: string,
  fileKey: string,
  from: number | undefined,
  limits: ReadLimits,
): Promise<UnembeddedChunks | undefined> {
  return (await store.unembeddedOf(datasetId, [{ fileKey, from }], limits))[0];
}

/**
 * Adds the vectors of a file's visible chunks from row `firstRow` on (the first without one). Undefined when
 * those chunks are no longer the file's visible ones.
 */
export async function addVectors(
  store: VectorStore,
  datasetId: string,
  fileKey: string,
  firstRow: number,
  vectors: readonly Float32Array[],
): Promise<EmbeddingProgress | undefined> {
  return (await store.addVectorsOf(datasetId, [{ fileKey, from: firstRow, vectors: vectors.map((vector) => [vector]) }]))[0];
}

/** The dataset's index as the SQLite store records it: its dimension and its visible chunks. */
export async function indexInfo(opened: OpenedDatabase, datasetId: string): Promise<IndexInfo | undefined> {
  const tables = datasetTables(datasetId);
  const index = await opened.exclusive((sqlite) => readIndex(sqlite, tables));
  return index && { dimension: index.dimension, chunkCount: index.chunkCount };
}
