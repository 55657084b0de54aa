import type { GarbageCollector } from '../garbage-collector.ts';
import type { ChunkSource, ChunkText, StagedFile } from '../store.ts';
import { leadOf, sourceWords } from '../tables.ts';
import {
  type ChunkSet,
  discardSet,
  lockIndex,
  type PreparedChunk,
  publishSet,
  reserveSet,
  retireFile as retireFileSets,
  writeRows,
} from './chunk-sets.ts';
import type { PostgresConnection } from './connection.ts';
import { postgresTables } from './dataset-tables.ts';
import type { Fts5Tokenizer } from './fts5-tokens.ts';
import { PgvectorMissingError } from './pgvector.ts';

/**
 * Phase 1 of a file in the PostgreSQL store, as in the SQLite one (../sqlite-staging.ts): its chunks written
 * as a hidden set in short transactions, then swapped in at once, or discarded; a file's chunks retired.
 * Each batch is tokenized before its transaction begins, so a transaction holds only SQL.
 */

/** The most chunks (and characters) one write transaction takes, as in the SQLite store. */
const WRITE_ROWS = 256;
const WRITE_CHARACTERS = 256_000;

export interface StagingContext {
  readonly connection: PostgresConnection;
  readonly garbage: GarbageCollector;
  readonly tokenizer: Fts5Tokenizer;
  /** Why vectors cannot be written, when the server lacks pgvector. */
  readonly vectorsMissing?: string;
}

class PostgresStagedFile implements StagedFile {
  written = 0;
  embedded = 0;
  set?: ChunkSet;
  lead?: string;

  constructor(
    readonly datasetId: string,
    readonly fileKey: string,
    readonly source: ChunkSource,
  ) {}
}

function stagedHere(staged: StagedFile): PostgresStagedFile {
  if (!(staged instanceof PostgresStagedFile)) throw new Error(`the chunks of ${staged.fileKey} were not staged by this store`);
  return staged;
}

export async function stage(
  context: StagingContext,
  datasetId: string,
  fileKey: string,
  source: ChunkSource,
  signal?: AbortSignal,
): Promise<StagedFile> {
  const tables = postgresTables(datasetId);
  const staged = new PostgresStagedFile(tables.datasetId, fileKey, source);
  if (fitsOneWrite(source)) return staged;
  try {
    while (staged.written < source.count) {
      signal?.throwIfAborted();
      const batch = nextBatch(context, staged);
      // The file holds the set only once its transaction commits: a failed one rolls the reservation back.
      staged.set = await context.connection.write(async (query) => {
        const index = await lockIndex(query, tables);
        const set = staged.set ?? (await reserveSet(query, tables, fileKey, source.count));
        await writeRows(query, tables, index.dimension, { ...set, embedded: staged.embedded }, staged.written, batch.rows);
        return set;
      });
      accept(staged, batch);
    }
  } catch (error) {
    await discard(context, staged);
    throw error;
  }
  return staged;
}

export async function publish(context: StagingContext, stagedFile: StagedFile): Promise<boolean> {
  const staged = stagedHere(stagedFile);
  const tables = postgresTables(staged.datasetId);
  const batch = !staged.set && staged.source.count > 0 ? nextBatch(context, staged) : undefined;
  const published = await context.connection.write(async (query) => {
    const index = await lockIndex(query, tables);
    if (staged.source.count === 0) {
      await retireFileSets(query, tables, staged.fileKey);
      return true;
    }
    let set = staged.set;
    if (!set && batch) {
      set = await reserveSet(query, tables, staged.fileKey, staged.source.count);
      await writeRows(query, tables, index.dimension, set, 0, batch.rows);
      if (batch.rows.length !== staged.source.count) throw new Error(`the chunks of ${staged.fileKey} are not all written`);
    } else if (staged.written !== staged.source.count) {
      throw new Error(`the chunks of ${staged.fileKey} are not all written`);
    }
    return publishSet(query, tables, (set as ChunkSet).id);
  });
  if (batch) {
    accept(staged, batch);
    staged.set = undefined; // published: nothing is left to discard
  }
  if (published) context.garbage.inBackground();
  return published;
}

export async function discard(context: StagingContext, stagedFile: StagedFile): Promise<void> {
  const set = stagedHere(stagedFile).set;
  if (!set) return;
  await context.connection.write((query) => discardSet(query, set.id));
  context.garbage.inBackground();
}

export async function retireFile(context: StagingContext, datasetId: string, fileKey: string): Promise<number> {
  const tables = postgresTables(datasetId);
  const hidden = await context.connection.write(async (query) => {
    await lockIndex(query, tables);
    return retireFileSets(query, tables, fileKey);
  });
  context.garbage.inBackground();
  return hidden;
}

function fitsOneWrite(source: ChunkSource): boolean {
  if (source.count > WRITE_ROWS) return false;
  let characters = 0;
  for (let index = 0; index < source.count; index++) characters += source.chunk(index).content.length;
  return characters <= WRITE_CHARACTERS;
}

interface Batch {
  readonly rows: PreparedChunk[];
  readonly lead: string;
}

/** The staged file's next chunks (at most WRITE_ROWS and WRITE_CHARACTERS), checked and tokenized. */
function nextBatch(context: StagingContext, staged: PostgresStagedFile): Batch {
  const chunks: { id: string; content: string; metadata: string; title: string; embedding?: Float32Array }[] = [];
  let characters = 0;
  for (let next = staged.written; next < staged.source.count && chunks.length < WRITE_ROWS && characters < WRITE_CHARACTERS; next++) {
    const chunk = checked(staged.source.chunk(next), context.vectorsMissing);
    chunks.push(chunk);
    characters += chunk.content.length;
  }
  const lead = staged.written === 0 ? leadOf(chunks[0]?.content ?? '') : (staged.lead ?? '');
  const source = sourceWords(staged.fileKey);
  const keywords = context.tokenizer.chunks(chunks.map((chunk) => ({ content: chunk.content, title: chunk.title, source, lead })));
  return {
    lead,
    rows: chunks.map((chunk, index) => ({
      id: chunk.id,
      content: chunk.content,
      metadata: chunk.metadata,
      keywords: keywords[index] as PreparedChunk['keywords'],
      ...(chunk.embedding ? { embedding: chunk.embedding } : {}),
    })),
  };
}

/** A batch's transaction committed: the file's writing moves past it. */
function accept(staged: PostgresStagedFile, batch: Batch): void {
  staged.lead = batch.lead;
  staged.written += batch.rows.length;
  staged.embedded += batch.rows.filter((row) => row.embedding).length;
}

function checked(chunk: ChunkText, vectorsMissing: string | undefined) {
  if (typeof chunk.content !== 'string') throw new Error('chunk content must be a string');
  if (chunk.embedding !== undefined && vectorsMissing !== undefined) throw new PgvectorMissingError(vectorsMissing);
  return {
    id: chunk.id ?? crypto.randomUUID(),
    content: chunk.content,
    metadata: JSON.stringify(chunk.metadata ?? {}),
    title: typeof chunk.metadata?.title === 'string' ? chunk.metadata.title : '',
    ...(chunk.embedding ? { embedding: chunk.embedding } : {}),
  };
}
