import type { ChunkRow } from './chunk-sets.ts';
import type { GarbageCollector } from './garbage-collector.ts';
import type { ChunkSource, ChunkText, FencingLease, StagedFile } from './store.ts';
import { datasetTables, leadOf } from './tables.ts';

/**
 * Phase 1 of a file, the same on both engines: its chunks written as a hidden set in short transactions,
 * then swapped in at once, or discarded; a file's chunks retired; what these hide deleted afterwards, in the
 * background, by the garbage collector (garbage-collector.ts). The engine (SQLite's sqlite-staging.ts,
 * PostgreSQL's postgres/staging.ts) supplies the transactions; this file decides when each runs.
 */

/**
 * The most chunks (and characters) one write transaction takes. Measured on SQLite with 1,000-character
 * chunks: 10 to 40 ms per 256 chunks (FTS5 and its merges most of it). Each transaction blocks the thread
 * that answers requests, and queries wait for it, so it is kept far below the 200 ms the API may stall at most.
 */
const WRITE_ROWS = 256;
const WRITE_CHARACTERS = 256_000;

/** A file being staged: how far its writing is, and the set it is written into. */
export class FileBeingStaged<Set> implements StagedFile {
  /** Chunks written so far, and how many of them came with their vector. */
  written = 0;
  embedded = 0;
  /** Reserved with the first write; a file small enough for one transaction is written as it is published. */
  set?: Set;
  /** The document's lead (tables.ts, leadOf), taken from its first chunk when that is written: indexed on every chunk. */
  lead?: string;

  constructor(
    /** The engine that staged it: another engine's store refuses it. */
    readonly engine: string,
    readonly datasetId: string,
    readonly fileKey: string,
    readonly source: ChunkSource,
  ) {}

  /** A batch's rows are written (their transaction committed, or is about to): the file's writing moves past them. */
  advance(rows: readonly { embedding?: Float32Array }[], lead: string): void {
    this.lead = lead;
    this.written += rows.length;
    this.embedded += rows.filter((row) => row.embedding).length;
  }
}

/**
 * What an engine does for phase 1, each method one short write transaction; those given a `lease` are
 * refused in it once the lease is lost (store.ts, FencingLease).
 */
export interface StagingEngine<Set> {
  /** Names the engine in FileBeingStaged.engine. */
  readonly name: string;
  /** Writes the file's next batch (nextChunks) into its set, reserving the set with the first, and advances the file. */
  writeNext(file: FileBeingStaged<Set>, lease?: FencingLease): Promise<void>;
  /**
   * Makes the file's set visible and hides its old one, writing the whole file first when it has no set yet
   * (a file with no chunks just loses its old ones). False when the set was discarded or the file deleted meanwhile.
   */
  publish(file: FileBeingStaged<Set>, lease?: FencingLease): Promise<boolean>;
  /** Turns a staged set into garbage. */
  discardSet(set: Set): Promise<void>;
  /** Hides every chunk of one file; how many there were. */
  retireFile(datasetId: string, fileKey: string, lease?: FencingLease): Promise<number>;
}

/** Phase 1 over an engine: the staging half of the VectorStore interface (store.ts). */
export class FileStaging<Set> {
  constructor(
    private readonly engine: StagingEngine<Set>,
    private readonly garbage: GarbageCollector,
  ) {}

  /**
   * Writes a file's chunks as a hidden set, in short transactions (WRITE_ROWS), between which the API
   * answers; a file that fits in one transaction is written by `publish` instead. On failure or abort what
   * was written is discarded.
   */
  async stage(datasetId: string, fileKey: string, source: ChunkSource, signal?: AbortSignal, lease?: FencingLease): Promise<StagedFile> {
    const staged = new FileBeingStaged<Set>(this.engine.name, datasetTables(datasetId).datasetId, fileKey, source);
    if (fitsOneWrite(source)) return staged;
    try {
      while (staged.written < source.count) {
        signal?.throwIfAborted();
        await this.engine.writeNext(staged, lease);
      }
    } catch (error) {
      await this.discard(staged);
      throw error;
    }
    return staged;
  }

  /**
   * Makes the staged chunks the file's chunks and hides its old ones, in one short transaction (a file
   * with no chunks just loses its old ones). False when the set was discarded or the file deleted meanwhile.
   */
  async publish(stagedFile: StagedFile, lease?: FencingLease): Promise<boolean> {
    const published = await this.engine.publish(this.stagedHere(stagedFile), lease);
    if (published) this.garbage.inBackground();
    return published;
  }

  /** Drops chunks staged and not published (safe after a publish: the set is no longer staged). */
  async discard(stagedFile: StagedFile): Promise<void> {
    const set = this.stagedHere(stagedFile).set;
    if (set === undefined) return;
    await this.engine.discardSet(set);
    this.garbage.inBackground();
  }

  /** Hides every chunk of one file at once. Returns how many there were. */
  async retireFile(datasetId: string, fileKey: string, lease?: FencingLease): Promise<number> {
    const hidden = await this.engine.retireFile(datasetId, fileKey, lease);
    this.garbage.inBackground();
    return hidden;
  }

  private stagedHere(staged: StagedFile): FileBeingStaged<Set> {
    if (!(staged instanceof FileBeingStaged) || staged.engine !== this.engine.name) {
      throw new Error(`the chunks of ${staged.fileKey} were not staged by this store`);
    }
    return staged as FileBeingStaged<Set>;
  }
}

function fitsOneWrite(source: ChunkSource): boolean {
  if (source.count > WRITE_ROWS) return false;
  let characters = 0;
  for (let index = 0; index < source.count; index++) characters += source.chunk(index).content.length;
  return characters <= WRITE_CHARACTERS;
}

/**
 * The staged file's next chunks (at most WRITE_ROWS and WRITE_CHARACTERS), each made a row by the engine's
 * `toRow` (which checks it), and the document's lead (tables.ts, leadOf) the batch is indexed with.
 */
export function nextChunks<Row extends { readonly content: string }>(
  file: FileBeingStaged<unknown>,
  toRow: (chunk: ChunkText) => Row,
): { rows: Row[]; lead: string } {
  const rows: Row[] = [];
  let characters = 0;
  for (let next = file.written; next < file.source.count && rows.length < WRITE_ROWS && characters < WRITE_CHARACTERS; next++) {
    const row = toRow(file.source.chunk(next));
    rows.push(row);
    characters += row.content.length;
  }
  const lead = file.written === 0 ? leadOf(rows[0]?.content ?? '') : (file.lead ?? '');
  return { rows, lead };
}

/**
 * A chunk as both engines write it: its text checked, its id made (a random UUID when the parser gave
 * none), its metadata serialised, its title (metadata.title) taken out to be indexed beside the text. The
 * vector is checked by each engine (the index's dimension on SQLite, pgvector's presence on PostgreSQL).
 */
export function chunkRowOf(chunk: ChunkText): ChunkRow {
  if (typeof chunk.content !== 'string') throw new Error('chunk content must be a string');
  return {
    id: chunk.id ?? crypto.randomUUID(),
    content: chunk.content,
    metadata: JSON.stringify(chunk.metadata ?? {}),
    title: typeof chunk.metadata?.title === 'string' ? chunk.metadata.title : '',
    ...(chunk.embedding ? { embedding: chunk.embedding } : {}),
  };
}
