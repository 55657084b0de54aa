import type { Calibration } from './calibration.ts';
import { countWords } from './keyword-search.ts';
import type { FittedCalibration, SampledFile } from './self-calibration.ts';
import type { StoreConnection } from './sqlite-connection.ts';
import { requireIndex } from './sqlite-index.ts';
import { datasetTables } from './tables.ts';

/**
 * A dataset's own calibration in the SQLite store (self-calibration.ts): what its pseudo-questions are made
 * of (sampled files), and the fitted result kept in `vector_calibrations` (migration 0014; dropped with the
 * dataset's index, sqlite-index.ts).
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
      .all(tables.datasetId) as { fileKey: string; firstRow: number; count: number }[];
    const stride = Math.max(1, sets.length / count);
    const files: SampledFile[] = [];
    const content = sqlite.query('SELECT content FROM vector_chunks WHERE row_id = ?');
    for (let at = 0; Math.floor(at) < sets.length && files.length < count; at += stride) {
      const set = sets[Math.floor(at)] as { fileKey: string; firstRow: number; count: number };
      if (set.count === 0) continue;
      const row = content.get(set.firstRow + ((Math.floor(at) * 7919 + seed) % set.count)) as { content: string } | null;
      if (!row) continue;
      const words = [...new Set(row.content.toLowerCase().match(/\p{L}{3,}/gu) ?? [])].slice(0, 200);
      const wordChunks = new Map(countWords(sqlite, tables, words).map((entry) => [entry.word, entry.chunks]));
      files.push({ fileKey: set.fileKey, text: row.content, wordChunks });
    }
    return { chunkCount: index.chunkCount, files };
  });
}

/** Stores a dataset's own calibration, replacing the one before. */
export async function saveCalibration(connection: StoreConnection, datasetId: string, fitted: FittedCalibration): Promise<void> {
  const tables = datasetTables(datasetId);
  await connection.write((sqlite) => {
    requireIndex(sqlite, tables);
    sqlite
      .query(
        'INSERT INTO vector_calibrations (dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration) VALUES (?, ?, ?, ?, ?, ?, ?) ' +
          'ON CONFLICT (dataset_id) DO UPDATE SET embedder = excluded.embedder, fitted_at = excluded.fitted_at, questions = excluded.questions, ' +
          'unanswerable = excluded.unanswerable, chunk_count = excluded.chunk_count, calibration = excluded.calibration',
      )
      .run(
        tables.datasetId,
        fitted.embedder,
        fitted.fittedAt,
        fitted.questions,
        fitted.unanswerable,
        fitted.chunkCount,
        JSON.stringify(fitted.calibration),
      );
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
      sqlite
        .query(
          'SELECT dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration FROM vector_calibrations ' +
            `WHERE dataset_id IN (${ids.map(() => '?').join(', ')})`,
        )
        .all(...ids) as {
        dataset_id: string;
        embedder: string;
        fitted_at: string;
        questions: number;
        unanswerable: number;
        chunk_count: number;
        calibration: string;
      }[],
  );
  return new Map(
    rows.map((row) => [
      row.dataset_id,
      {
        embedder: row.embedder,
        fittedAt: row.fitted_at,
        questions: row.questions,
        unanswerable: row.unanswerable,
        chunkCount: row.chunk_count,
        calibration: JSON.parse(row.calibration) as Calibration,
      },
    ]),
  );
}
