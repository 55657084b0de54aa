import { countWords } from './keyword-search.ts';
import type { FittedCalibration, SampledFile } from './self-calibration.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import {
  type CalibrationRow,
  calibrationParameters,
  fittedByDataset,
  SELECT_CALIBRATIONS,
  sampledRows,
  sampleWords,
  saveCalibrationSql,
  type VisibleSet,
} from './stored-calibrations.ts';
import { datasetTables } from './tables.ts';

/**
 * A dataset's own calibration in the SQLite store (self-calibration.ts): what its pseudo-questions are made
 * of (sampled files), and the fitted result kept in `vector_calibrations` (migration 0014; dropped with the
 * dataset's index, sqlite-index.ts); the sampling and the row codec shared with PostgreSQL's (stored-calibrations.ts).
 */

/**
 * Up to `count` of the dataset's visible files (spread evenly over them, the same ones each time for the
 * same files), each with the text of one of its chunks (chosen by `seed`) and how many chunks hold each of
 * its words.
 */
export async function sampleFiles(
  connection: StoreConnection,
  datasetId: string,
  count: number,
  seed: number,
): Promise<{ chunkCount: number; files: SampledFile[] }> {
  const tables = datasetTables(datasetId);
  return connection.read((sqlite) => {
    const index = requireIndex(sqlite, tables);
    const sets = sqlite
      .query(
        "SELECT file_key AS fileKey, first_row AS firstRow, count FROM vector_sets WHERE dataset_id = ? AND state = 'visible' ORDER BY file_key",
      )
      .all(tables.datasetId) as VisibleSet[];
    const files: SampledFile[] = [];
    const content = sqlite.query('SELECT content FROM vector_chunks WHERE row_id = ?');
    for (const { fileKey, rowid } of sampledRows(sets, count, seed)) {
      if (files.length >= count) break;
      const row = content.get(rowid) as { content: string } | null;
      if (!row) continue;
      const wordChunks = new Map(countWords(sqlite, tables, sampleWords(row.content)).map((entry) => [entry.word, entry.chunks]));
      files.push({ fileKey, text: row.content, wordChunks });
    }
    return { chunkCount: index.chunkCount, files };
  });
}

/** Stores a dataset's own calibration, replacing the one before. */
export async function saveCalibration(connection: StoreConnection, datasetId: string, fitted: FittedCalibration): Promise<void> {
  const tables = datasetTables(datasetId);
  await connection.write((sqlite) => {
    requireIndex(sqlite, tables);
    sqlite.query(saveCalibrationSql(() => '?')).run(...calibrationParameters(tables.datasetId, fitted));
  });
}

/** The datasets' own calibrations, by dataset id (those never fitted are absent). */
export async function fittedCalibrations(
  connection: StoreConnection,
  datasetIds: readonly string[],
): Promise<Map<string, FittedCalibration>> {
  const ids = datasetIds.map((id) => datasetTables(id).datasetId);
  if (ids.length === 0) return new Map();
  const rows = await connection.read(
    (sqlite) =>
      sqlite.query(`${SELECT_CALIBRATIONS}WHERE dataset_id IN (${ids.map(() => '?').join(', ')})`).all(...ids) as CalibrationRow[],
  );
  return fittedByDataset(rows);
}
