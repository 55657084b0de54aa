import { ServiceUnavailableError } from '../../domain/errors.ts';
import { datasetTables } from '../tables.ts';
import { hasHnswIndex, vectorType } from './pgvector.ts';

/**
 * Names and definitions of a dataset's own tables in the PostgreSQL store (the shared ones are in
 * migrations.ts). The SQLite store's FTS5 table becomes postings in plain tables, so that BM25 is computed
 * in SQL exactly as FTS5's bm25() computes it (keyword-search.ts):
 *
 * - chunks: the SQLite store's `vector_chunks` columns (row id, document id, file, text, metadata as JSON
 *   text, the vectors of its later pieces), plus `tokens`, the chunk's length in tokens over its four keyword
 *   fields (text, title, file name, the document's lead), which FTS5 keeps as the row's size;
 * - postings: blocks, one row per term and write (the chunks a transaction of phase 1 wrote, at most 256 of
 *   one file): the rows of the write holding the term (as offsets from its first row), and in parallel
 *   arrays each one's length and the term's count in each field (an array of zeros is NULL);
 * - terms: how many chunks (of every state, as FTS5's own counts) hold each term;
 * - embeddings: the vectors, in pgvector, with an HNSW index for cosine distance (only where the server
 *   has pgvector).
 *
 * Why blocks: one row per term and chunk (the first layout) cost, at 20,000 chunks of 120 words in files of
 * 250 (Debian's PostgreSQL 15 as the tests start it, 16 MB of shared buffers, two busy cores), 514 MB on
 * disk against the SQLite store's 26 MB, keyword search p50 31 ms / p90 100 ms against 5.8 / 32, and
 * indexing at about 270 chunks/s against 5,900: a posting was a row of about 135 bytes with its index
 * entries. In a block a posting is 12 bytes (16 for a word of the document's lead or file name), and a
 * frequent word is a few dozen rows read instead of thousands of index entries. Figures after: README's
 * benchmark section (scripts/bench/cluster-search.ts).
 */
export interface PostgresTables {
  /** The dataset id as stored in vector_indexes and vector_sets (lower case). */
  readonly datasetId: string;
  readonly chunks: string;
  readonly postings: string;
  readonly terms: string;
  readonly embeddings: string;
}

/** Table names from a dataset id (a UUID, checked by datasetTables, so a name never carries SQL). */
export function postgresTables(datasetId: string): PostgresTables {
  const { datasetId: normalised } = datasetTables(datasetId);
  const hex = normalised.replaceAll('-', '');
  return {
    datasetId: normalised,
    chunks: `vector_chunks_${hex}`,
    postings: `vector_postings_${hex}`,
    terms: `vector_terms_${hex}`,
    embeddings: `vector_embeddings_${hex}`,
  };
}

/**
 * The postings' layout, stored with each dataset's index (vector_indexes.postings_layout). A knode that
 * changes the layout raises it; one that finds another layout refuses the dataset (PostingsLayoutError)
 * rather than reading postings it does not understand, as a replica still on the older knode would during a
 * rolling upgrade.
 */
export const POSTINGS_LAYOUT = 1;

export class PostingsLayoutError extends ServiceUnavailableError {
  constructor(datasetId: string, layout: number) {
    super(
      `dataset ${datasetId}'s keyword index is in postings layout ${layout}, written by another version of knode; this ` +
        `replica reads layout ${POSTINGS_LAYOUT}: run the same knode on every replica`,
    );
    this.name = 'PostingsLayoutError';
  }
}

export function allTables(tables: PostgresTables): string[] {
  return [tables.embeddings, tables.postings, tables.terms, tables.chunks];
}

export function createKeywordTablesSql(tables: PostgresTables): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${tables.chunks} (
      row_id BIGINT PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      file_key TEXT NOT NULL,
      content TEXT NOT NULL,
      metadata TEXT NOT NULL,
      tokens INTEGER NOT NULL,
      later_pieces BYTEA
    )`,
    // Terms compare by their bytes, as FTS5's do. `first_row`..`last_row` are the write's rows (the
    // garbage collector deletes whole writes); `offsets` the rows holding the term, from `first_row`.
    `CREATE TABLE IF NOT EXISTS ${tables.postings} (
      term TEXT COLLATE "C" NOT NULL,
      first_row BIGINT NOT NULL,
      last_row BIGINT NOT NULL,
      offsets INTEGER[] NOT NULL,
      tokens INTEGER[] NOT NULL,
      content_counts INTEGER[],
      title_counts INTEGER[],
      source_counts INTEGER[],
      lead_counts INTEGER[],
      PRIMARY KEY (term, first_row)
    )`,
    // Hidden chunks are deleted by whole writes (garbage.ts).
    `CREATE INDEX IF NOT EXISTS ${tables.postings}_write ON ${tables.postings} (first_row)`,
    `CREATE TABLE IF NOT EXISTS ${tables.terms} (
      term TEXT COLLATE "C" PRIMARY KEY,
      chunks INTEGER NOT NULL
    )`,
  ];
}

export function createVectorTableSql(tables: PostgresTables, dimension: number): string[] {
  const type = vectorType(dimension);
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${tables.embeddings} (row_id BIGINT PRIMARY KEY, embedding ${type}(${dimension}) NOT NULL)`,
  ];
  if (hasHnswIndex(dimension)) {
    // pgvector's default EXTERNAL storage made exact scans 4x slower (docs/STACK.md); a vector this size fits a page.
    statements.push(`ALTER TABLE ${tables.embeddings} ALTER COLUMN embedding SET STORAGE PLAIN`);
    statements.push(
      `CREATE INDEX IF NOT EXISTS ${tables.embeddings}_hnsw ON ${tables.embeddings} USING hnsw (embedding ${type}_cosine_ops)`,
    );
  }
  return statements;
}
