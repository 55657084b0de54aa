/**
 * Scales `vector` in place to unit length and returns it. The vector store's cosine distance does not
 * need unit vectors, but the embedders promise them so that a dot product is a cosine everywhere.
 * A zero vector (nothing to point at) is left as it is rather than filled with NaN.
 */
export function l2Normalise(vector: Float32Array): Float32Array {
  let sumOfSquares = 0;
  for (const value of vector) sumOfSquares += value * value;
  if (sumOfSquares === 0 || !Number.isFinite(sumOfSquares)) return vector;
  const scale = 1 / Math.sqrt(sumOfSquares);
  for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] ?? 0) * scale;
  return vector;
}
