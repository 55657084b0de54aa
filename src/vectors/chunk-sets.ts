import type { Database as SqliteDatabase } from 'bun:sqlite';
import type { ChunkVectors } from '../embeddings/pieces.ts';
import { packLaterPieces } from './piece-similarity.ts';
import { type DatasetTables, datasetTables, hasBitColumn, type RowRange, sourceWords } from './tables.ts';

/**
 * A file's chunks as one set of consecutive row ids (table `vector_sets`, migration 0008). Writing a large
 * file takes many short transactions, so its new chunks are written as a `staged` set that searches do not
 * see; one short transaction then makes it `visible` and turns the file's old set into `garbage`, which
 * searches do not see either and which is deleted in small batches afterwards. A search therefore sees a
 * file's old chunks or its new ones, never a mix, and no transaction grows with the size of a file.
 *
 * Hidden sets are excluded from searches by their row id ranges (`hiddenRanges`): a comparison per
 * candidate, no lookup. Everything here runs synchronously inside the caller's transaction.
 */

type SetState = 'staged' | 'visible' | 'garbage';

export interface ChunkSet {
  readonly id: number;
  readonly fileKey: string;
  readonly firstRow: number;
  readonly lastRow: number;
  readonly count: number;
  /** The set's first `embedded` chunks have their vector; the others are searched by keywords only. */
  readonly embedded: number;
  readonly state: SetState;
}

/** A chunk ready to be written: checked, its metadata serialised. */
export interface ChunkRow {
  readonly id: string;
  readonly content: string;
  readonly metadata: string;
  /** The document's title (metadata.title), indexed for keywords beside the text. */
  readonly title: string;
  readonly embedding?: Float32Array;
}

/** A dataset's index as the writes need it. */
export interface IndexShape {
  readonly dimension: number;
  /** The columns of the keyword table (tables.ts, KEYWORD_LAYOUT). */
  readonly keywordLayout: number;
}

const SET_COLUMNS = 'id, file_key AS fileKey, first_row AS firstRow, last_row AS lastRow, count, embedded, state FROM vector_sets';

export function blob(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** Reserves `count` consecutive row ids for a new, hidden set of the file's chunks. */
export function reserveSet(sqlite: SqliteDatabase, tables: DatasetTables, fileKey: string, count: number): ChunkSet {
  const { first } = sqlite
    .query('UPDATE vector_row_counter SET next_row = next_row + ? WHERE id = 1 RETURNING next_row - ? AS first')
    .get(count, count) as { first: number };
  const { id } = sqlite
    .query(
      "INSERT INTO vector_sets (dataset_id, file_key, first_row, last_row, count, embedded, state) VALUES (?, ?, ?, ?, ?, 0, 'staged') RETURNING id",
    )
    .get(tables.datasetId, fileKey, first, first + count - 1, count) as { id: number };
  return { id, fileKey, firstRow: first, lastRow: first + count - 1, count, embedded: 0, state: 'staged' };
}

/**
 * Writes `rows` as the set's chunks `offset`, `offset + 1`... A row with a vector must follow the set's
 * embedded chunks (vectors are written in order).
 */
export function writeRows(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  index: IndexShape,
  set: ChunkSet,
  offset: number,
  rows: readonly ChunkRow[],
  lead = '',
): void {
  if (offset < 0 || offset + rows.length > set.count)
    throw new Error(`rows ${offset}..${offset + rows.length} are outside a set of ${set.count}`);
  const insertChunk = sqlite.query(
    'INSERT INTO vector_chunks (row_id, id, dataset_id, file_key, content, metadata) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const insertText = keywordInsert(sqlite, tables, index.keywordLayout);
  const source = sourceWords(set.fileKey);
  let vectors = 0;
  for (const [position, row] of rows.entries()) {
    const rowid = set.firstRow + offset + position;
    insertChunk.run(rowid, row.id, tables.datasetId, set.fileKey, row.content, row.metadata);
    insertText(rowid, row.content, row.title, source, lead);
    if (row.embedding) {
      if (offset + position !== set.embedded + vectors) throw new Error('chunk vectors must be written in order');
      insertVector(sqlite, tables, index.dimension, rowid, row.embedding);
      vectors++;
    }
  }
  if (vectors > 0) sqlite.query('UPDATE vector_sets SET embedded = embedded + ? WHERE id = ?').run(vectors, set.id);
}

/**
 * Makes a staged set the file's chunks and hides the file's previous ones, in the caller's transaction.
 * False when the set is no longer staged (the file was deleted, or the set discarded, meanwhile).
 */
export function publishSet(sqlite: SqliteDatabase, tables: DatasetTables, setId: number): boolean {
  const set = sqlite.query(`SELECT ${SET_COLUMNS} WHERE id = ?`).get(setId) as ChunkSet | null;
  if (set?.state !== 'staged') return false;
  const hidden = retireFileSets(sqlite, tables, set.fileKey);
  sqlite.query("UPDATE vector_sets SET state = 'visible' WHERE id = ?").run(set.id);
  adjustCount(sqlite, tables, set.count - hidden);
  return true;
}

/** Hides every chunk of the file, staged ones included; returns how many were visible. */
export function retireFile(sqlite: SqliteDatabase, tables: DatasetTables, fileKey: string): number {
  const hidden = retireFileSets(sqlite, tables, fileKey);
  adjustCount(sqlite, tables, -hidden);
  return hidden;
}

function retireFileSets(sqlite: SqliteDatabase, tables: DatasetTables, fileKey: string): number {
  const { visible } = sqlite
    .query("SELECT coalesce(sum(count), 0) AS visible FROM vector_sets WHERE dataset_id = ? AND file_key = ? AND state = 'visible'")
    .get(tables.datasetId, fileKey) as { visible: number };
  sqlite
    .query("UPDATE vector_sets SET state = 'garbage' WHERE dataset_id = ? AND file_key = ? AND state != 'garbage'")
    .run(tables.datasetId, fileKey);
  return visible;
}

/** A staged set that will not be published (its file's work was cancelled or failed). */
export function discardSet(sqlite: SqliteDatabase, setId: number): void {
  sqlite.query("UPDATE vector_sets SET state = 'garbage' WHERE id = ? AND state = 'staged'").run(setId);
}

/** At a dataset's start no file is being written: staged sets are what a crash or a stop left behind. */
export function discardStaged(sqlite: SqliteDatabase, tables: DatasetTables): void {
  sqlite.query("UPDATE vector_sets SET state = 'garbage' WHERE state = 'staged' AND dataset_id = ?").run(tables.datasetId);
}

/** Rows searches must not see (sets being written or being deleted; usually none), with how many have a vector. */
export interface HiddenRange extends RowRange {
  readonly vectors: number;
}

export function hiddenRanges(sqlite: SqliteDatabase, tables: DatasetTables): HiddenRange[] {
  return sqlite
    .query(
      "SELECT first_row AS first, last_row AS last, embedded AS vectors FROM vector_sets WHERE state IN ('staged', 'garbage') AND dataset_id = ?",
    )
    .all(tables.datasetId) as HiddenRange[];
}

/**
 * Deletes up to `maxRows` chunks of one garbage set (of any dataset), and the set once it is empty; its
 * vectors go first, since a vector search must look past hidden vectors (sqlite-search.ts, visibleNeighbours)
 * while keyword searches skip hidden rows at no cost. False when there is no garbage left.
 */
export function collectGarbage(sqlite: SqliteDatabase, maxRows: number): boolean {
  const set = sqlite
    .query("SELECT id, dataset_id, file_key, first_row, last_row, embedded FROM vector_sets WHERE state = 'garbage' LIMIT 1")
    .get() as { id: number; dataset_id: string; file_key: string; first_row: number; last_row: number; embedded: number } | null;
  if (!set) return false;
  const tables = datasetTables(set.dataset_id);
  const rowsOfSet = sqlite.query(
    'SELECT row_id FROM vector_chunks WHERE row_id BETWEEN ? AND ? AND dataset_id = ? AND file_key = ? LIMIT ?',
  );
  if (set.embedded > 0) {
    // The set's vectors are its first `embedded` chunks: the last of them are deleted first.
    const from = set.first_row + Math.max(0, set.embedded - maxRows);
    const rows = rowsOfSet.all(from, set.first_row + set.embedded - 1, tables.datasetId, set.file_key, maxRows) as { row_id: number }[];
    const deleteVector = sqlite.query(`DELETE FROM ${tables.vectors} WHERE rowid = ?`);
    for (const { row_id } of rows) deleteVector.run(row_id);
    sqlite.query('UPDATE vector_sets SET embedded = ? WHERE id = ?').run(from - set.first_row, set.id);
    return true;
  }
  const rows = rowsOfSet.all(set.first_row, set.last_row, tables.datasetId, set.file_key, maxRows) as { row_id: number }[];
  const deleteText = sqlite.query(`DELETE FROM ${tables.keywords} WHERE rowid = ?`);
  const deleteChunk = sqlite.query('DELETE FROM vector_chunks WHERE row_id = ?');
  for (const { row_id } of rows) {
    deleteText.run(row_id);
    deleteChunk.run(row_id);
  }
  if (rows.length < maxRows) sqlite.query('DELETE FROM vector_sets WHERE id = ?').run(set.id);
  return true;
}

/** The file's visible set, if it has one. */
export function visibleSet(sqlite: SqliteDatabase, tables: DatasetTables, fileKey: string): ChunkSet | undefined {
  const set = sqlite
    .query(`SELECT ${SET_COLUMNS} WHERE dataset_id = ? AND file_key = ? AND state = 'visible'`)
    .get(tables.datasetId, fileKey) as ChunkSet | null;
  return set ?? undefined;
}

/** Files with visible chunks still waiting for their vectors, in the order their chunks were written. */
export function filesToEmbed(sqlite: SqliteDatabase, tables: DatasetTables): string[] {
  const rows = sqlite
    .query("SELECT file_key FROM vector_sets WHERE state = 'visible' AND dataset_id = ? AND embedded < count ORDER BY first_row")
    .all(tables.datasetId) as { file_key: string }[];
  return rows.map((row) => row.file_key);
}

/** Up to `texts` chunks (and about `characters`) of rows `from`..`to`, in order. */
export function readRows(
  sqlite: SqliteDatabase,
  from: number,
  to: number,
  { texts, characters }: { texts: number; characters: number },
): { rowid: number; content: string }[] {
  const rows = sqlite
    .query('SELECT row_id AS rowid, content FROM vector_chunks WHERE row_id BETWEEN ? AND ? ORDER BY row_id LIMIT ?')
    .all(from, to, texts) as { rowid: number; content: string }[];
  return readRowsWithin(rows, characters);
}

/** The first of `rows` whose texts add up to about `characters` (at least one row), as both engines read them back. */
export function readRowsWithin<T extends { content: string }>(rows: T[], characters: number): T[] {
  let size = 0;
  for (const [index, row] of rows.entries()) {
    size += row.content.length;
    if (size > characters && index > 0) return rows.slice(0, index);
  }
  return rows;
}

/**
 * Writes the vectors of the file's visible chunks from row `firstRow` on, which must be the set's first
 * chunk without one. Undefined when the file has no visible set holding that row any more.
 */
export function addVectors(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  dimension: number,
  fileKey: string,
  firstRow: number,
  vectors: readonly ChunkVectors[],
): ChunkSet | undefined {
  const set = visibleSet(sqlite, tables, fileKey);
  if (!set || firstRow < set.firstRow || firstRow > set.lastRow + 1) return undefined;
  if (firstRow !== set.firstRow + set.embedded) throw new Error(`vectors of ${fileKey} must be written in order`);
  if (firstRow + vectors.length - 1 > set.lastRow) throw new Error(`more vectors than ${fileKey} has chunks`);
  const savePieces = laterPiecesWriter(sqlite);
  for (const [offset, pieces] of vectors.entries()) {
    const [opening] = pieces;
    if (!opening) throw new Error(`a chunk of ${fileKey} has no vector`);
    insertVector(sqlite, tables, dimension, firstRow + offset, opening);
    for (const piece of pieces.slice(1)) checkVector(piece, dimension);
    const later = packLaterPieces(pieces);
    if (later) savePieces(firstRow + offset, later);
  }
  sqlite.query('UPDATE vector_sets SET embedded = embedded + ? WHERE id = ?').run(vectors.length, set.id);
  return { ...set, embedded: set.embedded + vectors.length };
}

function insertVector(sqlite: SqliteDatabase, tables: DatasetTables, dimension: number, rowid: number, vector: Float32Array): void {
  checkVector(vector, dimension);
  const bytes = blob(vector);
  if (hasBitColumn(dimension)) {
    sqlite
      .query(`INSERT INTO ${tables.vectors} (rowid, embedding, embedding_bits) VALUES (?, ?, vec_quantize_binary(?))`)
      .run(rowid, bytes, bytes);
  } else {
    sqlite.query(`INSERT INTO ${tables.vectors} (rowid, embedding) VALUES (?, ?)`).run(rowid, bytes);
  }
}

/**
 * Writes a chunk's later pieces (piece-similarity.ts); a chunk gone, or with pieces already, is left as it is (a
 * row's text never changes, nor do its pieces).
 */
export function laterPiecesWriter(sqlite: SqliteDatabase): (rowid: number, pieces: Uint8Array) => void {
  const update = sqlite.query('UPDATE vector_chunks SET later_pieces = ? WHERE row_id = ? AND later_pieces IS NULL');
  return (rowid, pieces) => void update.run(pieces, rowid);
}

export function checkVector(vector: Float32Array, dimension: number): void {
  if (!(vector instanceof Float32Array) || vector.length !== dimension) {
    const got = vector instanceof Float32Array ? `${vector.length} dimensions` : 'no Float32Array';
    throw new Error(`chunk embedding must have ${dimension} dimensions, got ${got}`);
  }
  if (!vector.every(Number.isFinite)) throw new Error('chunk embedding holds a value that is not a finite number');
}

/**
 * A keyword row of a chunk, in the table's layout: the text; in layout 2 its document's title and file
 * name; in layout 3 also its document's lead (tables.ts).
 */
export function keywordInsert(
  sqlite: SqliteDatabase,
  tables: DatasetTables,
  layout: number,
): (rowid: number, content: string, title: string, source: string, lead: string) => void {
  if (layout < 2) {
    const insert = sqlite.query(`INSERT INTO ${tables.keywords} (rowid, content) VALUES (?, ?)`);
    return (rowid, content) => void insert.run(rowid, content);
  }
  if (layout < 3) {
    const insert = sqlite.query(`INSERT INTO ${tables.keywords} (rowid, content, title, source) VALUES (?, ?, ?, ?)`);
    return (rowid, content, title, source) => void insert.run(rowid, content, title, source);
  }
  const insert = sqlite.query(`INSERT INTO ${tables.keywords} (rowid, content, title, source, lead) VALUES (?, ?, ?, ?, ?)`);
  return (rowid, content, title, source, lead) => void insert.run(rowid, content, title, source, lead);
}

/** `chunk_count` counts the visible chunks: what searches see. */
function adjustCount(sqlite: SqliteDatabase, tables: DatasetTables, delta: number): void {
  if (delta === 0) return;
  sqlite.query('UPDATE vector_indexes SET chunk_count = chunk_count + ? WHERE dataset_id = ?').run(delta, tables.datasetId);
}
