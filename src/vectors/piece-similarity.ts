import type { ChunkVectors } from '../embeddings/pieces.ts';

/**
 * A chunk's similarity to a query as the best of its pieces' (issue 23, item 2; embeddings/pieces.ts), the
 * same on both engines. The vector index holds each chunk's first piece, its opening, and finds the
 * candidates by it; the chunk's later pieces are stored with the chunk (`later_pieces`: their float32
 * vectors one after another, NULL when the chunk fits in one piece) and, once a query's candidates are
 * found, each candidate's cosine is raised to its closest piece's.
 *
 * Why the candidates are found by the opening alone: putting every piece in the vector index made its scan
 * 2.5 to 4.4 times slower (README, Retrieval: at 100,000 chunks 217 ms against 49), and on the evaluation
 * sets the candidates found by the best piece were no better in hybrid mode than the opening's, completed
 * with BM25's (scripts/eval/described/pieces-hybrid.ts). Re-scoring the ~80 candidates of a search reads
 * their later pieces (about 1.5 a chunk of 1,000 characters with USE-lite) and takes well under a
 * millisecond (scripts/bench/search.ts).
 */

/**
 * Which vectors an index's chunks have (`vector_indexes.vector_layout`): 1, each chunk's opening alone (every
 * index made before whole-chunk vectors); 2, the later pieces too. A new index starts in 2; one in 1 gets its
 * chunks' later pieces in the background (ingestion/piece-backfill.ts), then moves to 2.
 */
export const VECTOR_LAYOUT = 2;

/** The later pieces of a chunk as stored; undefined when it has none (it fits in one piece). */
export function packLaterPieces(vectors: ChunkVectors): Uint8Array | undefined {
  return vectors.length < 2 ? undefined : packPieces(vectors.slice(1), (vectors[0] as Float32Array).length);
}

/** Vectors of `dimension` as stored: float32s, one vector after another. */
export function packPieces(vectors: readonly Float32Array[], dimension: number): Uint8Array {
  const packed = new Float32Array(dimension * vectors.length);
  for (const [index, vector] of vectors.entries()) {
    if (vector.length !== dimension) throw new Error(`a piece's vector has ${vector.length} dimensions, the chunk's ${dimension}`);
    packed.set(vector, index * dimension);
  }
  return new Uint8Array(packed.buffer);
}

/** The stored later pieces back as vectors of `dimension` (a blob of another size is ignored: no pieces). */
export function unpackLaterPieces(stored: Uint8Array, dimension: number): Float32Array[] {
  const width = dimension * Float32Array.BYTES_PER_ELEMENT;
  if (stored.byteLength === 0 || stored.byteLength % width !== 0) return [];
  // A copy: a driver's buffer need not start at a multiple of four bytes.
  const floats = new Float32Array(stored.slice().buffer);
  return Array.from({ length: stored.byteLength / width }, (_, index) => floats.subarray(index * dimension, (index + 1) * dimension));
}

/**
 * Raises each candidate's cosine (by row id) to that of its closest later piece, where one is closer than
 * its opening; `pieces` holds the stored later pieces of the candidates that have some.
 */
export function raiseToBestPiece(cosines: Map<number, number>, pieces: ReadonlyMap<number, Uint8Array>, query: Float32Array): void {
  const queryNorm = Math.sqrt(dot(query, query));
  if (queryNorm === 0) return;
  for (const [rowid, stored] of pieces) {
    const opening = cosines.get(rowid);
    if (opening === undefined) continue;
    let best = opening;
    for (const piece of unpackLaterPieces(stored, query.length)) {
      const norm = Math.sqrt(dot(piece, piece));
      if (norm > 0) best = Math.max(best, dot(query, piece) / (queryNorm * norm));
    }
    cosines.set(rowid, best);
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let index = 0; index < a.length; index++) sum += (a[index] as number) * (b[index] as number);
  return sum;
}
