import type { FittedCalibration, SampledFile } from '../self-calibration.ts';
import {
  type CalibrationRow,
  calibrationParameters,
  fittedByDataset,
  SELECT_CALIBRATIONS,
  sampledRows,
  sampleWords,
  saveCalibrationSql,
} from '../stored-calibrations.ts';
import { requireIndex } from './chunk-sets.ts';
import { anyRow, anyText, jsonRows, type PostgresConnection } from './connection.ts';
import { postgresTables } from './dataset-tables.ts';
import type { Fts5Tokenizer } from './fts5-tokens.ts';
import { termCounts } from './keyword-search.ts';

/**
 * A dataset's own calibration in the PostgreSQL store (../self-calibration.ts), as in the SQLite one
 * (../sqlite-calibrations.ts): what its pseudo-questions are made of, and the fitted result in the control
 * tables' `vector_calibrations` (src/db/postgres/migrations; dropped with the dataset's index); the sampling and
 * the row codec shared (../stored-calibrations.ts).
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
    const picked = [...sampledRows(sets, count, seed)].slice(0, count);
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
      const words = sampleWords(text);
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
      saveCalibrationSql((position) => `$${position}`),
      calibrationParameters(tables.datasetId, fitted),
    );
  });
}

export async function fittedCalibrations(
  connection: PostgresConnection,
  datasetIds: readonly string[],
): Promise<Map<string, FittedCalibration>> {
  const ids = datasetIds.map((id) => postgresTables(id).datasetId);
  if (ids.length === 0) return new Map();
  const rows = await connection.query<CalibrationRow>(`${SELECT_CALIBRATIONS}WHERE dataset_id ${anyText(1)}`, [jsonRows(ids)]);
  return fittedByDataset(rows);
}
