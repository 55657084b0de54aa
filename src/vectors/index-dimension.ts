/**
 * The vector dimension a dataset's index may have, the same on both engines (sqlite-index.ts,
 * postgres/dataset-index.ts): sqlite-vec's bound (pgvector's columns would take up to 16,000), fixed at
 * the index's creation.
 */

const MAX_DIMENSION = 8192;

/** Refuses a dimension that is not a whole number from 1 to MAX_DIMENSION. */
export function checkDimension(dimension: number): void {
  if (!Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION) {
    throw new Error(`vector dimension must be an integer from 1 to ${MAX_DIMENSION}, got ${dimension}`);
  }
}

/** Refuses to create again, with another dimension, an index that exists (the vectors written would not fit it). */
export function checkSameDimension(datasetId: string, existing: { readonly dimension: number } | undefined, dimension: number): void {
  if (existing && existing.dimension !== dimension) {
    throw new Error(`dataset ${datasetId} already has a ${existing.dimension}-dimension index, not ${dimension}`);
  }
}
