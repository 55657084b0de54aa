import type { ChunkVectors } from '../../embeddings/pieces.ts';
import { type ChunkSet, checkVector, type HiddenRange, readRowsWithin } from '../chunk-sets.ts';
import { packLaterPieces } from '../piece-similarity.ts';
import { VectorIndexMissingError } from '../store.ts';
import { jsonRows, type Query } from './connection.ts';
import { POSTINGS_LAYOUT, type PostgresTables, PostingsLayoutError } from './dataset-tables.ts';
import type { TokenizedChunk } from './fts5-tokens.ts';
import { vectorLiteral, vectorType } from './pgvector.ts';

/**
 * A file's chunks as one set of consecutive row ids (table `vector_sets`), as in the SQLite store
 * (../chunk-sets.ts, which says why): written `staged`, made `visible` at once, replaced or deleted ones
 * `garbage`, deleted in batches afterwards (garbage.ts). Everything here runs inside the caller's transaction.
 *
 * Lock order, so that no two writes wait for each other: a write to a dataset's keyword tables first locks
 * the dataset's row of vector_indexes (lockIndex), then its sets; vector writes lock only their set.
 */

/** A set, its states and the hidden rows are the SQLite store's (../chunk-sets.ts): one meaning, two engines. */
export type { ChunkSet, HiddenRange } from '../chunk-sets.ts';

export interface IndexRow {
  readonly dimension: number;
  /** The visible chunks: what searches see. */
  readonly chunkCount: number;
  /** Rows and tokens of the whole keyword index, hidden chunks included: FTS5's row count and total size. */
  readonly keywordRows: number;
  readonly keywordTokens: number;
  /** dataset-tables.ts, POSTINGS_LAYOUT. */
  readonly postingsLayout: number;
  /** Which vectors its chunks have (../piece-similarity.ts, VECTOR_LAYOUT). */
  readonly vectorLayout: number;
}

/** A chunk ready to be written: checked, its metadata serialised, its keyword fields tokenized. */
export interface PreparedChunk {
  readonly id: string;
  readonly content: string;
  readonly metadata: string;
  readonly keywords: TokenizedChunk;
  readonly embedding?: Float32Array;
}

const SET_COLUMNS = 'id, file_key AS "fileKey", first_row AS "firstRow", last_row AS "lastRow", count, embedded, state FROM vector_sets';
const INDEX_COLUMNS =
  'dimension, chunk_count AS "chunkCount", keyword_rows AS "keywordRows", keyword_tokens AS "keywordTokens", ' +
  'postings_layout AS "postingsLayout", vector_layout AS "vectorLayout" FROM vector_indexes';

export async function readIndex(query: Query, tables: PostgresTables): Promise<IndexRow | undefined> {
  const [row] = await query<IndexRow>(`SELECT ${INDEX_COLUMNS} WHERE dataset_id = $1`, [tables.datasetId]);
  return row && numbers(row);
}

/** The index row, for reading or writing its chunks: in the postings layout this knode reads. */
export async function requireIndex(query: Query, tables: PostgresTables): Promise<IndexRow> {
  const index = await readIndex(query, tables);
  if (!index) throw new VectorIndexMissingError(tables.datasetId);
  return inKnownLayout(tables, index);
}

/** The index row as it is, or PostingsLayoutError when its postings are in a layout this knode does not read. */
export function inKnownLayout(tables: PostgresTables, index: IndexRow): IndexRow {
  if (index.postingsLayout !== POSTINGS_LAYOUT) throw new PostingsLayoutError(tables.datasetId, index.postingsLayout);
  return index;
}

/** The index row, locked until the transaction ends: every write to the dataset's keyword tables takes it first. */
export async function lockIndex(query: Query, tables: PostgresTables): Promise<IndexRow> {
  const [row] = await query<IndexRow>(`SELECT ${INDEX_COLUMNS} WHERE dataset_id = $1 FOR UPDATE`, [tables.datasetId]);
  if (!row) throw new VectorIndexMissingError(tables.datasetId);
  return inKnownLayout(tables, numbers(row));
}

/** Reserves `count` consecutive row ids of the dataset for a new, hidden set of the file's chunks. */
export async function reserveSet(query: Query, tables: PostgresTables, fileKey: string, count: number): Promise<ChunkSet> {
  const [reserved] = await query<{ first: number }>(
    'UPDATE vector_indexes SET next_row = next_row + $1 WHERE dataset_id = $2 RETURNING next_row - $1 AS first',
    [count, tables.datasetId],
  );
  const first = Number(reserved?.first);
  const [row] = await query<{ id: number }>(
    "INSERT INTO vector_sets (dataset_id, file_key, first_row, last_row, count, embedded, state) VALUES ($1, $2, $3, $4, $5, 0, 'staged') RETURNING id",
    [tables.datasetId, fileKey, first, first + count - 1, count],
  );
  return { id: Number(row?.id), fileKey, firstRow: first, lastRow: first + count - 1, count, embedded: 0, state: 'staged' };
}

/**
 * Writes `rows` as the set's chunks `offset`, `offset + 1`...: the chunks, their postings, the terms'
 * chunk counts and the index's totals. A row with a vector must follow the set's embedded chunks.
 */
export async function writeRows(
  query: Query,
  tables: PostgresTables,
  dimension: number,
  set: ChunkSet,
  offset: number,
  rows: readonly PreparedChunk[],
): Promise<void> {
  if (offset < 0 || offset + rows.length > set.count)
    throw new Error(`rows ${offset}..${offset + rows.length} are outside a set of ${set.count}`);
  if (rows.length === 0) return;
  const rowid = (position: number) => set.firstRow + offset + position;
  await query(
    `INSERT INTO ${tables.chunks} (row_id, id, file_key, content, metadata, tokens) ` +
      `SELECT (e->>0)::bigint, e->>1, $2, e->>2, e->>3, (e->>4)::int FROM json_array_elements($1::text::json) e`,
    [jsonRows(rows.map((row, position) => [rowid(position), row.id, row.content, row.metadata, row.keywords.tokens])), set.fileKey],
  );
  const blocks = new Map<string, PostingBlock>();
  let tokens = 0;
  for (const [position, row] of rows.entries()) {
    tokens += row.keywords.tokens;
    for (const { term, content, title, source, lead } of row.keywords.terms) {
      let block = blocks.get(term);
      if (!block) {
        block = { offsets: [], tokens: [], content: [], title: [], source: [], lead: [] };
        blocks.set(term, block);
      }
      block.offsets.push(position);
      block.tokens.push(row.keywords.tokens);
      block.content.push(content);
      block.title.push(title);
      block.source.push(source);
      block.lead.push(lead);
    }
  }
  if (blocks.size > 0) {
    // In the terms' order: the (term, first_row) index is written page after page, and two writes of one
    // dataset lock the terms' counts in the same order (the index row already orders them).
    const terms = [...blocks.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    await query(
      `INSERT INTO ${tables.postings} (term, first_row, last_row, offsets, tokens, content_counts, title_counts, source_counts, lead_counts) ` +
        'SELECT e->>0, $2::bigint, $3::bigint, (e->>1)::int[], (e->>2)::int[], (e->>3)::int[], (e->>4)::int[], (e->>5)::int[], (e->>6)::int[] ' +
        'FROM json_array_elements($1::text::json) e',
      [
        jsonRows(
          terms.map((term) => {
            const block = blocks.get(term) as PostingBlock;
            const counts = [block.content, block.title, block.source, block.lead].map((values) =>
              values.some((value) => value !== 0) ? values : undefined,
            );
            return [term, ...[block.offsets, block.tokens, ...counts].map(arrayLiteral)];
          }),
        ),
        rowid(0),
        rowid(rows.length - 1),
      ],
    );
    await query(
      `INSERT INTO ${tables.terms} (term, chunks) SELECT e->>0, (e->>1)::int FROM json_array_elements($1::text::json) e ORDER BY 1 ` +
        `ON CONFLICT (term) DO UPDATE SET chunks = ${tables.terms}.chunks + excluded.chunks`,
      [jsonRows(terms.map((term) => [term, (blocks.get(term) as PostingBlock).offsets.length]))],
    );
  }
  await query('UPDATE vector_indexes SET keyword_rows = keyword_rows + $1, keyword_tokens = keyword_tokens + $2 WHERE dataset_id = $3', [
    rows.length,
    tokens,
    tables.datasetId,
  ]);
  const withVectors = rows.flatMap((row, position) => (row.embedding ? [{ rowid: rowid(position), vector: row.embedding }] : []));
  if (withVectors.length > 0) {
    if (withVectors.some(({ rowid: id }, index) => id !== set.firstRow + set.embedded + index)) {
      throw new Error('chunk vectors must be written in order');
    }
    await insertVectors(query, tables, dimension, withVectors);
    await query('UPDATE vector_sets SET embedded = embedded + $1 WHERE id = $2', [withVectors.length, set.id]);
  }
}

/** A term's postings in one write, as the columns of its block (dataset-tables.ts). */
interface PostingBlock {
  readonly offsets: number[];
  readonly tokens: number[];
  readonly content: number[];
  readonly title: number[];
  readonly source: number[];
  readonly lead: number[];
}

/**
 * An array column's value as PostgreSQL's text for it (parsed by one cast, cheaper than JSON arrays); null
 * for a field's counts that are all zero (`undefined`: a term in no chunk's title, file name or lead, as most are).
 */
function arrayLiteral(values: readonly number[] | undefined): string | null {
  return values ? `{${values.join(',')}}` : null;
}

/**
 * Makes a staged set the file's chunks and hides the file's previous ones (the index row is locked by the
 * caller). False when the set is no longer staged.
 */
export async function publishSet(query: Query, tables: PostgresTables, setId: number): Promise<boolean> {
  const [set] = await query<ChunkSet>(`SELECT ${SET_COLUMNS} WHERE id = $1 FOR UPDATE`, [setId]);
  if (set?.state !== 'staged') return false;
  const hidden = await retireFileSets(query, tables, set.fileKey);
  await query("UPDATE vector_sets SET state = 'visible' WHERE id = $1", [setId]);
  await adjustCount(query, tables, Number(set.count) - hidden);
  return true;
}

/** Hides every chunk of the file, staged ones included; returns how many were visible. */
export async function retireFile(query: Query, tables: PostgresTables, fileKey: string): Promise<number> {
  const hidden = await retireFileSets(query, tables, fileKey);
  await adjustCount(query, tables, -hidden);
  return hidden;
}

async function retireFileSets(query: Query, tables: PostgresTables, fileKey: string): Promise<number> {
  const [row] = await query<{ visible: number }>(
    "SELECT coalesce(sum(count), 0) AS visible FROM vector_sets WHERE dataset_id = $1 AND file_key = $2 AND state = 'visible'",
    [tables.datasetId, fileKey],
  );
  await query("UPDATE vector_sets SET state = 'garbage' WHERE dataset_id = $1 AND file_key = $2 AND state <> 'garbage'", [
    tables.datasetId,
    fileKey,
  ]);
  return Number(row?.visible ?? 0);
}

/** A staged set that will not be published (its file's work was cancelled or failed). */
export async function discardSet(query: Query, setId: number): Promise<void> {
  await query("UPDATE vector_sets SET state = 'garbage' WHERE id = $1 AND state = 'staged'", [setId]);
}

/** At a dataset's start no file is being written: staged sets are what a crash or a stop left behind. */
export async function discardStaged(query: Query, tables: PostgresTables): Promise<void> {
  await query("UPDATE vector_sets SET state = 'garbage' WHERE dataset_id = $1 AND state = 'staged'", [tables.datasetId]);
}

/** Rows searches must not see (sets being written or being deleted; usually none), with how many have a vector. */
export async function hiddenRanges(query: Query, tables: PostgresTables): Promise<HiddenRange[]> {
  const rows = await query<HiddenRange>(
    "SELECT first_row AS first, last_row AS last, embedded AS vectors FROM vector_sets WHERE dataset_id = $1 AND state IN ('staged', 'garbage')",
    [tables.datasetId],
  );
  return rows.map(numbers);
}

/** The file's visible set, if it has one (`lock`: until the transaction ends, for its vectors to be written). */
export async function visibleSet(query: Query, tables: PostgresTables, fileKey: string, lock = false): Promise<ChunkSet | undefined> {
  const [set] = await query<ChunkSet>(
    `SELECT ${SET_COLUMNS} WHERE dataset_id = $1 AND file_key = $2 AND state = 'visible'${lock ? ' FOR UPDATE' : ''}`,
    [tables.datasetId, fileKey],
  );
  return set && numbers(set);
}

/** Files with visible chunks still waiting for their vectors, in the order their chunks were written. */
export async function filesWaitingForVectors(query: Query, tables: PostgresTables): Promise<string[]> {
  const rows = await query<{ file_key: string }>(
    "SELECT file_key FROM vector_sets WHERE dataset_id = $1 AND state = 'visible' AND embedded < count ORDER BY first_row",
    [tables.datasetId],
  );
  return rows.map((row) => row.file_key);
}

/** Up to `texts` chunks (and about `characters`) of rows `from`..`to`, in order. */
export async function readRows(
  query: Query,
  tables: PostgresTables,
  from: number,
  to: number,
  { texts, characters }: { texts: number; characters: number },
): Promise<{ rowid: number; content: string }[]> {
  const rows = (
    await query<{ rowid: number; content: string }>(
      `SELECT row_id AS rowid, content FROM ${tables.chunks} WHERE row_id BETWEEN $1 AND $2 ORDER BY row_id LIMIT $3`,
      [from, to, texts],
    )
  ).map((row) => ({ rowid: Number(row.rowid), content: row.content }));
  return readRowsWithin(rows, characters);
}

/**
 * Writes the vectors of the file's visible chunks from row `firstRow` on, which must be the set's first
 * chunk without one. Undefined when the file has no visible set holding that row any more.
 */
export async function addVectors(
  query: Query,
  tables: PostgresTables,
  dimension: number,
  fileKey: string,
  firstRow: number,
  vectors: readonly ChunkVectors[],
): Promise<ChunkSet | undefined> {
  const set = await visibleSet(query, tables, fileKey, true);
  if (!set || firstRow < set.firstRow || firstRow > set.lastRow + 1) return undefined;
  if (firstRow !== set.firstRow + set.embedded) throw new Error(`vectors of ${fileKey} must be written in order`);
  if (firstRow + vectors.length - 1 > set.lastRow) throw new Error(`more vectors than ${fileKey} has chunks`);
  if (vectors.length === 0) return set;
  const rows = vectors.map((pieces, offset) => {
    const [opening] = pieces;
    if (!opening) throw new Error(`a chunk of ${fileKey} has no vector`);
    // The opening is checked where it is inserted.
    for (const piece of pieces.slice(1)) checkVector(piece, dimension);
    return { rowid: firstRow + offset, vector: opening, later: packLaterPieces(pieces) };
  });
  await insertVectors(query, tables, dimension, rows);
  await saveLaterPieces(query, tables, rows);
  await query('UPDATE vector_sets SET embedded = embedded + $1 WHERE id = $2', [vectors.length, set.id]);
  return { ...set, embedded: set.embedded + vectors.length };
}

async function insertVectors(
  query: Query,
  tables: PostgresTables,
  dimension: number,
  rows: readonly { rowid: number; vector: Float32Array }[],
): Promise<void> {
  for (const { vector } of rows) checkVector(vector, dimension);
  await query(
    `INSERT INTO ${tables.embeddings} (row_id, embedding) ` +
      `SELECT (e->>0)::bigint, (e->>1)::${vectorType(dimension)}(${dimension}) FROM json_array_elements($1::text::json) e`,
    [jsonRows(rows.map(({ rowid, vector }) => [rowid, vectorLiteral(vector)]))],
  );
}

/**
 * The chunks' later pieces (../piece-similarity.ts), in one statement; nothing for chunks that fit in one piece.
 * A chunk gone, or with pieces already, is left as it is (a row's text never changes).
 */
export async function saveLaterPieces(
  query: Query,
  tables: PostgresTables,
  rows: readonly { rowid: number; later: Uint8Array | undefined }[],
): Promise<void> {
  const withPieces = rows.filter((row) => row.later !== undefined);
  if (withPieces.length === 0) return;
  await query(
    `UPDATE ${tables.chunks} c SET later_pieces = decode(e->>1, 'base64') FROM json_array_elements($1::text::json) e ` +
      'WHERE c.row_id = (e->>0)::bigint AND c.later_pieces IS NULL',
    [jsonRows(withPieces.map(({ rowid, later }) => [rowid, Buffer.from(later as Uint8Array).toString('base64')]))],
  );
}

/** `chunk_count` counts the visible chunks: what searches see. */
async function adjustCount(query: Query, tables: PostgresTables, delta: number): Promise<void> {
  if (delta === 0) return;
  await query('UPDATE vector_indexes SET chunk_count = chunk_count + $1 WHERE dataset_id = $2', [delta, tables.datasetId]);
}

/**
 * Numbers as numbers, whatever the driver: BIGINT columns and sums come as strings from a driver that does
 * not convert them (knode's Bun.SQL dialect and PGlite do).
 */
function numbers<T extends object>(row: T): T {
  const converted = { ...row } as Record<string, unknown>;
  for (const key of NUMERIC_FIELDS) if (key in converted) converted[key] = Number(converted[key]);
  return converted as T;
}

const NUMERIC_FIELDS = [
  'id',
  'firstRow',
  'lastRow',
  'count',
  'embedded',
  'dimension',
  'chunkCount',
  'keywordRows',
  'keywordTokens',
  'postingsLayout',
  'vectorLayout',
  'first',
  'last',
  'vectors',
];
