import type { Calibration } from './calibration.ts';
import type { FittedCalibration } from './self-calibration.ts';

/**
 * What both engines' calibration files share (sqlite-calibrations.ts, postgres/calibrations.ts): which
 * chunks a dataset's pseudo-questions are made of, which of a chunk's words are counted, and a fitted
 * calibration as a row of `vector_calibrations`. Only the SQL's placeholders and the reads differ per engine.
 */

/** A visible file's set of rows, as both engines read it from `vector_sets` (ordered by file key). */
export interface VisibleSet {
  readonly fileKey: string;
  readonly firstRow: number;
  readonly count: number;
}

/**
 * The rows to sample from `sets`, for `count` files: spread evenly over the files, the same ones each time
 * for the same files, the chunk of each chosen by `seed`. Empty sets are passed over; the caller stops once
 * it has `count` files (a row it cannot read does not count).
 */
export function* sampledRows(sets: readonly VisibleSet[], count: number, seed: number): Generator<{ fileKey: string; rowid: number }> {
  const stride = Math.max(1, sets.length / count);
  for (let at = 0; Math.floor(at) < sets.length; at += stride) {
    const set = sets[Math.floor(at)] as VisibleSet;
    if (set.count === 0) continue;
    yield { fileKey: set.fileKey, rowid: set.firstRow + ((Math.floor(at) * 7919 + seed) % set.count) };
  }
}

/** The words of a sampled chunk whose chunk counts are asked for: distinct, three letters or more, the first 200. */
export function sampleWords(text: string): string[] {
  return [...new Set(text.toLowerCase().match(/\p{L}{3,}/gu) ?? [])].slice(0, 200);
}

/** Stores a fitted calibration, replacing the dataset's one before; `placeholder(n)` is the engine's nth parameter. */
export function saveCalibrationSql(placeholder: (position: number) => string): string {
  const values = [1, 2, 3, 4, 5, 6, 7].map(placeholder).join(', ');
  return (
    `INSERT INTO vector_calibrations (dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration) VALUES (${values}) ` +
    'ON CONFLICT (dataset_id) DO UPDATE SET embedder = excluded.embedder, fitted_at = excluded.fitted_at, questions = excluded.questions, ' +
    'unanswerable = excluded.unanswerable, chunk_count = excluded.chunk_count, calibration = excluded.calibration'
  );
}

/** The parameters of saveCalibrationSql, in its order. */
export function calibrationParameters(datasetId: string, fitted: FittedCalibration): (string | number)[] {
  return [
    datasetId,
    fitted.embedder,
    fitted.fittedAt,
    fitted.questions,
    fitted.unanswerable,
    fitted.chunkCount,
    JSON.stringify(fitted.calibration),
  ];
}

/** The columns a stored calibration is read from, before the engine's WHERE. */
export const SELECT_CALIBRATIONS =
  'SELECT dataset_id, embedder, fitted_at, questions, unanswerable, chunk_count, calibration FROM vector_calibrations ';

/** A `vector_calibrations` row as read (PostgreSQL may hand numbers over as strings). */
export interface CalibrationRow {
  dataset_id: string;
  embedder: string;
  fitted_at: string;
  questions: number;
  unanswerable: number;
  chunk_count: number;
  calibration: string;
}

/** The stored calibrations by dataset id. */
export function fittedByDataset(rows: readonly CalibrationRow[]): Map<string, FittedCalibration> {
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
