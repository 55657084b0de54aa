import type { ChunkRow } from '../chunk-sets.ts';
import { chunkRowOf, type FileBeingStaged, nextChunks, type StagingEngine } from '../file-staging.ts';
import type { ChunkText } from '../store.ts';
import { sourceWords } from '../tables.ts';
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
 * Phase 1's transactions in the PostgreSQL store (the steps and when each runs: ../file-staging.ts, as in
 * the SQLite store): a batch of a file's chunks written into its hidden set, the set swapped in at once, or
 * discarded; a file's chunks retired. Each batch is tokenized before its transaction begins, so a
 * transaction holds only SQL; the file moves past it once the transaction commits.
 */

export interface StagingContext {
  readonly connection: PostgresConnection;
  readonly tokenizer: Fts5Tokenizer;
  /** Why vectors cannot be written, when the server lacks pgvector. */
  readonly vectorsMissing?: string;
}

export function postgresStaging(context: StagingContext): StagingEngine<ChunkSet> {
  return {
    name: 'PostgreSQL',

    async writeNext(staged, lease) {
      const tables = postgresTables(staged.datasetId);
      const batch = nextBatch(context, staged);
      // The file holds the set only once its transaction commits: a failed one rolls the reservation back.
      staged.set = await context.connection.write(async (query) => {
        const index = await lockIndex(query, tables);
        const set = staged.set ?? (await reserveSet(query, tables, staged.fileKey, staged.source.count));
        await writeRows(query, tables, index.dimension, { ...set, embedded: staged.embedded }, staged.written, batch.rows);
        return set;
      }, lease);
      staged.advance(batch.rows, batch.lead);
    },

    async publish(staged, lease) {
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
      }, lease);
      if (batch) {
        staged.advance(batch.rows, batch.lead);
        staged.set = undefined; // published: nothing is left to discard
      }
      return published;
    },

    async discardSet(set) {
      await context.connection.write((query) => discardSet(query, set.id));
    },

    retireFile(datasetId, fileKey, lease) {
      const tables = postgresTables(datasetId);
      return context.connection.write(async (query) => {
        await lockIndex(query, tables);
        return retireFileSets(query, tables, fileKey);
      }, lease);
    },
  };
}

/** The staged file's next chunks (../file-staging.ts, nextChunks), checked and tokenized. */
function nextBatch(context: StagingContext, staged: FileBeingStaged<ChunkSet>): { rows: PreparedChunk[]; lead: string } {
  const { rows: chunks, lead } = nextChunks(staged, (chunk) => checked(chunk, context.vectorsMissing));
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

/** A chunk as the store writes it (../file-staging.ts, chunkRowOf), refused with a vector when pgvector is missing. */
function checked(chunk: ChunkText, vectorsMissing: string | undefined): ChunkRow {
  const row = chunkRowOf(chunk);
  if (chunk.embedding !== undefined && vectorsMissing !== undefined) throw new PgvectorMissingError(vectorsMissing);
  return row;
}
