import type { Calibration } from '../calibration.ts';
import type { FittedCalibration, SampledFile } from '../self-calibration.ts';
import { requireIndex } from './chunk-sets.ts';
import { anyRow, anyText, jsonRows, type PostgresConnection } from './connection.ts';
import { postgresTables } from './dataset-tables.ts';
import type { Fts5Tokenizer } from './fts5-tokens.ts';
import { termCounts } from './keyword-search.ts';

/**
 * A dataset's own calibration in the PostgreSQL store (../self-calibration.ts), as in the SQLite one
 * (../sqlite-calibrations.ts): what its pseudo-questions are made of, and the fitted result in the control
 * tables' `vector_calibrations` (src/db/postgres/migrations; dropped with the dataset's index).
 */

export async function sampleFiles(
  connection: PostgresConnection,
  tokenizer: Fts5Tokenizer,
  datasetId: string,
  count: number,
  seed: number,
): Promise<{ chunkCount: number; files: SampledFile[] }> {
  const tables = postgresTables(datasetId);
  return connection.read(async (query) => {
    const index = await requireIndex(query, tables);
    const sets = (
      await query<{ fileKey: string; firstRow: number; count: number }>(
        `SELECT file_key AS "fileKey", first_row AS "firstRow", count FROM vector_sets WHERE dataset_id = $1 AND state = 'visible' ` +
          'ORDER BY file_key COLLATE "C"',
        [tables.datasetId],
      )
    ).map((set) => ({ fileKey: set.fileKey, firstRow: Number(set.firstRow), count: Number(set.count) }));
    const stride = Math.max(1, sets.length / count);
    const picked: { fileKey: string; rowid: number }[] = [];
    for (let at = 0; Math.floor(at) < sets.length && picked.length < count; at += stride) {
      const set = sets[Math.floor(at)] as (typeof sets)[number];
      if (set.count === 0) continue;
      picked.push({ fileKey: set.fileKey, rowid: set.firstRow + ((Math.floor(at) * 7919 + seed) % set.count) });
    }
    const contents = new Map(
      (
        await query<{ row_id: number; content: string }>(`SELECT row_id, content FROM ${tables.chunks} WHERE row_id ${anyRow(1)}`, [
          jsonRows(picked.map((entry) => entry.rowid)),
        ])
      ).map((row) => [Number(row.row_id), row.content]),
    );
    const files: SampledFile[] = [];
    for (const { fileKey, rowid } of picked) {
      const text = contents.get(rowid);
      if (text === undefined) continue;
      const words = [...new Set(text.toLowerCase().match(/\p{L}{3,}/gu) ?? [])].slice(0, 200);
      // As the SQLite store's countWords: the most chunks any of a word's terms is in; words no chunk holds left out.
      const terms = tokenizer.words(words);
      const holding = await termCounts(query, tables, terms.flat());
      const wordChunks = new Map<string, number>();
      for (const [position, word] of words.entries()) {
        const chunks = Math.max(0, ...(terms[position] ?? []).map((term) => holding.get(term) ?? 0));
        if (chunks > 0) wordChunks.set(word, chunks);
      }
      files.push({ fileKey, text, wordChunks });
    }
    return { chunkCount: index.chunkCount, files };
  });
}

export async function saveCalibration(connection: PostgresConnection, datasetId: string, fitted: FittedCalibration): Promise<void> {
  const tables = postgresTables(datasetId);
  await connection.write(async (query) => {
    await requireIndex(query, tables);
    await query(
      'INSERT INTO vector_calibrations (dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration) VALUES ($1, $2, $3, $4, $5, $6, $7) ' +
        'ON CONFLICT (dataset_id) DO UPDATE SET embedder = excluded.embedder, fitted_at = excluded.fitted_at, questions = excluded.questions, ' +
        'unanswerable = excluded.unanswerable, chunk_count = excluded.chunk_count, calibration = excluded.calibration',
      [
        tables.datasetId,
        fitted.embedder,
        fitted.fittedAt,
        fitted.questions,
        fitted.unanswerable,
        fitted.chunkCount,
        JSON.stringify(fitted.calibration),
      ],
    );
  });
}

export async function fittedCalibrations(
  connection: PostgresConnection,
  datasetIds: readonly string[],
): Promise<Map<string, FittedCalibration>> {
  const ids = datasetIds.map((id) => postgresTables(id).datasetId);
  if (ids.length === 0) return new Map();
  const rows = await connection.query<{
    dataset_id: string;
    embedder: string;
    fitted_at: string;
    questions: number;
    unanswerable: number;
    chunk_count: number;
    calibration: string;
  }>(
    'SELECT dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration FROM vector_calibrations ' +
      `WHERE dataset_id ${anyText(1)}`,
    [jsonRows(ids)],
  );
  return new Map(
    rows.map((row) => [
      row.dataset_id,
      {
        embedder: row.embedder,
        fittedAt: row.fitted_at,
        questions: Number(row.questions),
        unanswerable: Number(row.unanswerable),
        chunkCount: Number(row.chunk_count),
        calibration: JSON.parse(row.calibration) as Calibration,
      },
    ]),
  );
}
