import type { Database as SqliteDatabase } from 'bun:sqlite';
import {
  type ChunkRow,
  type ChunkSet,
  checkVector,
  discardSet,
  type IndexShape,
  publishSet,
  reserveSet,
  retireFile as retireFileSets,
  writeRows,
} from './chunk-sets.ts';
import { chunkRowOf, type FileBeingStaged, nextChunks, type StagingEngine } from './file-staging.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import type { ChunkText } from './store.ts';
import { type DatasetTables, datasetTables } from './tables.ts';

/**
 * Phase 1's transactions in the SQLite store (the steps and when each runs: file-staging.ts): a batch of a
 * file's chunks written into its hidden set, the set swapped in at once (chunk-sets.ts), or discarded; a
 * file's chunks retired. Each runs synchronously in one short write transaction; a batch is read from the
 * source and checked inside it, against the index's dimension.
 */
export function sqliteStaging(connection: StoreConnection): StagingEngine<ChunkSet> {
  return {
    name: 'SQLite',

    async writeNext(staged, lease) {
      const tables = datasetTables(staged.datasetId);
      await connection.write((sqlite) => {
        const index = requireIndex(sqlite, tables);
        writeBatch(sqlite, tables, index, staged, staged.set ?? reserveSet(sqlite, tables, staged.fileKey, staged.source.count));
      }, lease);
    },

    publish(staged, lease) {
      const tables = datasetTables(staged.datasetId);
      return connection.write((sqlite) => {
        const index = requireIndex(sqlite, tables);
        if (staged.source.count === 0) {
          retireFileSets(sqlite, tables, staged.fileKey);
          return true;
        }
        if (!staged.set) writeBatch(sqlite, tables, index, staged, reserveSet(sqlite, tables, staged.fileKey, staged.source.count));
        const set = staged.set as ChunkSet;
        if (staged.written !== staged.source.count) throw new Error(`the chunks of ${staged.fileKey} are not all written`);
        return publishSet(sqlite, tables, set.id);
      }, lease);
    },

    async discardSet(set) {
      await connection.write((sqlite) => discardSet(sqlite, set.id));
    },

    retireFile(datasetId, fileKey, lease) {
      const tables = datasetTables(datasetId);
      return connection.write((sqlite) => {
        requireIndex(sqlite, tables);
        return retireFileSets(sqlite, tables, fileKey);
      }, lease);
    },
  };
}

/**
 * Writes the staged file's next chunks into `set`, inside the caller's transaction. The file holds the set
 * only once its rows are written: a transaction that fails rolls the reservation back, and the file must
 * not keep a set id a later reservation may take.
 */
function writeBatch(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  index: IndexShape,
  staged: FileBeingStaged<ChunkSet>,
  set: ChunkSet,
): void {
  const { rows, lead } = nextChunks(staged, (chunk) => chunkRow(chunk, index.dimension));
  writeRows(sqlite, tables, index, { ...set, embedded: staged.embedded }, staged.written, rows, lead);
  staged.set = set;
  staged.advance(rows, lead);
}

/** A chunk as the store writes it (file-staging.ts, chunkRowOf), its vector checked against the index's dimension first. */
function chunkRow(chunk: ChunkText, dimension: number): ChunkRow {
  if (chunk.embedding !== undefined) checkVector(chunk.embedding, dimension);
  return chunkRowOf(chunk);
}
