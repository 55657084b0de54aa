/** Names and definitions of a dataset's own tables (the shared ones are in migration 0002-vectors). */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The FTS5 tokenizer of every keyword table (and of the query-word table that must agree with it):
 * Porter stemming over unicode61, case and accents folded.
 */
export const TOKENIZER = 'porter unicode61 remove_diacritics 2';

export interface DatasetTables {
  /** The dataset id as stored in vector_indexes / vector_chunks (lower case). */
  readonly datasetId: string;
  /** sqlite-vec vec0: `embedding float[dim]` (cosine), plus `embedding_bits bit[dim]` when dim % 8 = 0. */
  readonly vectors: string;
  /** FTS5, contentless: the text lives once, in vector_chunks. */
  readonly keywords: string;
  /** fts5vocab over `keywords`: how many chunks hold each term. */
  readonly vocabulary: string;
}

/** Table names from a dataset id. Only a UUID is accepted, so a name can never carry SQL. */
export function datasetTables(datasetId: string): DatasetTables {
  if (!UUID.test(datasetId)) throw new Error(`dataset id must be a UUID, got "${datasetId}"`);
  const normalised = datasetId.toLowerCase();
  const hex = normalised.replaceAll('-', '');
  return { datasetId: normalised, vectors: `vec_${hex}`, keywords: `fts_${hex}`, vocabulary: `fts_${hex}_vocab` };
}

/** A bit vector needs whole bytes; other dimensions are only scanned exactly. */
export function hasBitColumn(dimension: number): boolean {
  return dimension % 8 === 0;
}

/**
 * The columns of a dataset's keyword table. Layout 1 indexed the chunk's text only; layout 2 adds the
 * document's title and its file name (folders and words of the name), which say what a whole document
 * is about and weigh more in BM25 (see keyword-search.ts); layout 3 adds the document's lead (its first
 * LEAD_CHARACTERS, where a document says what it is about) on every chunk. An older table is rebuilt at
 * the dataset's next start, from the chunks' stored text and metadata (no file is read or embedded again).
 */
export const KEYWORD_LAYOUT = 3;

/** How much of a document's opening is its lead: about the first paragraph (issue 23's experiment used 400). */
const LEAD_CHARACTERS = 400;

/** A document's lead from its first chunk: its first LEAD_CHARACTERS, cut at a word boundary. */
export function leadOf(firstChunk: string): string {
  if (firstChunk.length <= LEAD_CHARACTERS) return firstChunk;
  const cut = firstChunk.slice(0, LEAD_CHARACTERS);
  const space = cut.lastIndexOf(' ');
  return space > LEAD_CHARACTERS / 2 ? cut.slice(0, space) : cut;
}

export function createTablesSql(tables: DatasetTables, dimension: number): string[] {
  const bits = hasBitColumn(dimension) ? `, embedding_bits bit[${dimension}]` : '';
  return [
    `CREATE VIRTUAL TABLE IF NOT EXISTS ${tables.vectors} USING vec0(embedding float[${dimension}] distance_metric=cosine${bits})`,
    ...createKeywordTablesSql(tables),
  ];
}

export function createKeywordTablesSql(tables: DatasetTables): string[] {
  return [
    // contentless_delete keeps DELETE working on a contentless table (SQLite 3.43+).
    `CREATE VIRTUAL TABLE IF NOT EXISTS ${tables.keywords} USING fts5(content, title, source, lead, content='', contentless_delete=1, tokenize='${TOKENIZER}')`,
    `CREATE VIRTUAL TABLE IF NOT EXISTS ${tables.vocabulary} USING fts5vocab(${tables.keywords}, 'row')`,
    // By default a segment is rewritten whole as soon as a tenth of its rows are deleted: deleting a large
    // file's chunks then made one small batch take 300 ms (measured, 20,000 chunks). Deleted rows are
    // dropped by the ordinary merges instead, which new chunks trigger a little at a time.
    `INSERT INTO ${tables.keywords}(${tables.keywords}, rank) VALUES ('deletemerge', 0)`,
  ];
}

export function dropKeywordTablesSql(tables: DatasetTables): string[] {
  return [`DROP TABLE IF EXISTS ${tables.vocabulary}`, `DROP TABLE IF EXISTS ${tables.keywords}`];
}

export function dropTablesSql(tables: DatasetTables): string[] {
  return [...dropKeywordTablesSql(tables), `DROP TABLE IF EXISTS ${tables.vectors}`];
}

/** What the `source` column holds for a file: the words of its path, without the extension. */
export function sourceWords(fileKey: string): string {
  return fileKey.replace(/\.[A-Za-z0-9]+$/, '').replace(/[\\/_.-]+/g, ' ');
}

/** Row ids `first` to `last` of `vector_chunks` (and of the dataset's vec0 and FTS5 tables), both included. */
export interface RowRange {
  readonly first: number;
  readonly last: number;
}

/** SQL that is true when `column` lies in none of `ranges`, with its parameters (nothing when there are none). */
export function outsideRanges(column: string, ranges: readonly RowRange[]): { sql: string; params: number[] } {
  if (ranges.length === 0) return { sql: '', params: [] };
  return {
    sql: ranges.map(() => ` AND ${column} NOT BETWEEN ? AND ?`).join(''),
    params: ranges.flatMap((range) => [range.first, range.last]),
  };
}

export function inRanges(rowid: number, ranges: readonly RowRange[]): boolean {
  return ranges.some((range) => rowid >= range.first && rowid <= range.last);
}
