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
import type { GarbageCollector } from './garbage-collector.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import type { ChunkSource, ChunkText, StagedFile } from './store.ts';
import { type DatasetTables, datasetTables, leadOf } from './tables.ts';

/**
 * Phase 1 of a file in the SQLite store: its chunks written as a hidden set in short transactions, then
 * swapped in at once (chunk-sets.ts), or discarded; a file's chunks retired. What these hide is deleted
 * afterwards, in the background, by the garbage collector (sqlite-garbage.ts).
 */

/**
 * The most chunks (and characters) one write transaction takes. Measured here with 1,000-character chunks:
 * 10 to 40 ms per 256 chunks (FTS5 and its merges most of it). Each transaction blocks the thread that
 * answers requests, and queries wait for it, so it is kept far below the 200 ms the API may stall at most.
 */
const WRITE_ROWS = 256;
const WRITE_CHARACTERS = 256_000;

/** A file being staged in the SQLite store: how far its writing is, and the set it is written into. */
class SqliteStagedFile implements StagedFile {
  /** Chunks written so far, and how many of them came with their vector. */
  written = 0;
  embedded = 0;
  /** Reserved with the first write; a file small enough for one transaction is written as it is published. */
  set?: ChunkSet;
  /** The document's lead (tables.ts, leadOf), taken from its first chunk when that is written: indexed on every chunk. */
  lead?: string;

  constructor(
    readonly datasetId: string,
    readonly fileKey: string,
    readonly source: ChunkSource,
  ) {}
}

function stagedHere(staged: StagedFile): SqliteStagedFile {
  if (!(staged instanceof SqliteStagedFile)) throw new Error(`the chunks of ${staged.fileKey} were not staged by this store`);
  return staged;
}

/**
 * Writes a file's chunks as a hidden set, in short transactions (WRITE_ROWS), between which the API
 * answers; a file that fits in one transaction is written by `publish` instead. On failure or abort what
 * was written is discarded.
 */
export async function stage(
  connection: StoreConnection,
  garbage: GarbageCollector,
  datasetId: string,
  fileKey: string,
  source: ChunkSource,
  signal?: AbortSignal,
): Promise<StagedFile> {
  const tables = datasetTables(datasetId);
  const staged = new SqliteStagedFile(tables.datasetId, fileKey, source);
  if (fitsOneWrite(source)) return staged;
  try {
    while (staged.written < source.count) {
      signal?.throwIfAborted();
      await connection.write((sqlite) => {
        const index = requireIndex(sqlite, tables);
        writeBatch(sqlite, tables, index, staged, staged.set ?? reserveSet(sqlite, tables, fileKey, source.count));
      });
    }
  } catch (error) {
    await discard(connection, garbage, staged);
    throw error;
  }
  return staged;
}

/**
 * Makes the staged chunks the file's chunks and hides its old ones, in one short transaction (a file
 * with no chunks just loses its old ones). False when the set was discarded or the file deleted meanwhile.
 */
export async function publish(connection: StoreConnection, garbage: GarbageCollector, stagedFile: StagedFile): Promise<boolean> {
  const staged = stagedHere(stagedFile);
  const tables = datasetTables(staged.datasetId);
  const published = await connection.write((sqlite) => {
    const index = requireIndex(sqlite, tables);
    if (staged.source.count === 0) {
      retireFileSets(sqlite, tables, staged.fileKey);
      return true;
    }
    if (!staged.set) writeBatch(sqlite, tables, index, staged, reserveSet(sqlite, tables, staged.fileKey, staged.source.count));
    const set = staged.set as ChunkSet;
    if (staged.written !== staged.source.count) throw new Error(`the chunks of ${staged.fileKey} are not all written`);
    return publishSet(sqlite, tables, set.id);
  });
  if (published) garbage.inBackground();
  return published;
}

/** Drops chunks staged and not published (safe after a publish: the set is no longer staged). */
export async function discard(connection: StoreConnection, garbage: GarbageCollector, stagedFile: StagedFile): Promise<void> {
  const set = stagedHere(stagedFile).set;
  if (!set) return;
  await connection.write((sqlite) => discardSet(sqlite, set.id));
  garbage.inBackground();
}

/** Hides every chunk of one file at once. Returns how many there were. */
export async function retireFile(
  connection: StoreConnection,
  garbage: GarbageCollector,
  datasetId: string,
  fileKey: string,
): Promise<number> {
  const tables = datasetTables(datasetId);
  const hidden = await connection.write((sqlite) => {
    requireIndex(sqlite, tables);
    return retireFileSets(sqlite, tables, fileKey);
  });
  garbage.inBackground();
  return hidden;
}

function fitsOneWrite(source: ChunkSource): boolean {
  if (source.count > WRITE_ROWS) return false;
  let characters = 0;
  for (let index = 0; index < source.count; index++) characters += source.chunk(index).content.length;
  return characters <= WRITE_CHARACTERS;
}

/**
 * Writes the staged file's next chunks (at most WRITE_ROWS and WRITE_CHARACTERS) into `set`, inside the
 * caller's transaction. The file holds the set only once its rows are written: a transaction that fails
 * rolls the reservation back, and the file must not keep a set id a later reservation may take.
 */
function writeBatch(sqlite: SqliteDatabase, tables: DatasetTables, index: IndexShape, staged: SqliteStagedFile, set: ChunkSet): void {
  const rows: ChunkRow[] = [];
  let characters = 0;
  for (let next = staged.written; next < staged.source.count && rows.length < WRITE_ROWS && characters < WRITE_CHARACTERS; next++) {
    const row = chunkRow(staged.source.chunk(next), index.dimension);
    rows.push(row);
    characters += row.content.length;
  }
  const lead = staged.written === 0 ? leadOf(rows[0]?.content ?? '') : (staged.lead ?? '');
  writeRows(sqlite, tables, index, { ...set, embedded: staged.embedded }, staged.written, rows, lead);
  staged.set = set;
  staged.lead = lead;
  staged.written += rows.length;
  staged.embedded += rows.filter((row) => row.embedding).length;
}

/** A chunk as the store writes it: checked, its id made, its metadata serialised. */
function chunkRow(chunk: ChunkText, dimension: number): ChunkRow {
  if (chunk.embedding !== undefined) checkVector(chunk.embedding, dimension);
  if (typeof chunk.content !== 'string') throw new Error('chunk content must be a string');
  return {
    id: chunk.id ?? crypto.randomUUID(),
    content: chunk.content,
    metadata: JSON.stringify(chunk.metadata ?? {}),
    title: typeof chunk.metadata?.title === 'string' ? chunk.metadata.title : '',
    ...(chunk.embedding ? { embedding: chunk.embedding } : {}),
  };
}
