import type { EmbeddingProgress, VectorPart } from './store.ts';

/**
 * Phase 2's vector writes, sliced the same way on both engines (sqlite-vector-progress.ts,
 * postgres/vector-progress.ts): the vectors of several files (a window of the embedding lane) in
 * transactions of at most the engine's number of rows, in order, each part's answer its file's progress.
 */

/** One part's vectors (or the slice of them) in a transaction, with the part's position in the call. */
export type VectorSlicePart = VectorPart & { readonly part: number };

/**
 * Writes the parts' vectors a slice at a time (`writeSlice`: one transaction, answering each part's progress,
 * undefined for a part whose chunks are no longer the file's visible ones). Such a part's later vectors have
 * no place: they are left out of the slices after.
 */
export async function writeVectorSlices(
  parts: readonly VectorPart[],
  rows: number,
  writeSlice: (slice: readonly VectorSlicePart[]) => Promise<ReadonlyMap<number, EmbeddingProgress | undefined>>,
): Promise<(EmbeddingProgress | undefined)[]> {
  const progress: (EmbeddingProgress | undefined)[] = parts.map(() => undefined);
  const gone = new Set<number>();
  for (const slice of vectorSlices(parts, rows)) {
    const written = await writeSlice(slice.filter((entry) => !gone.has(entry.part)));
    for (const [part, answer] of written) {
      progress[part] = answer;
      if (answer === undefined) gone.add(part);
    }
  }
  return progress;
}

/** The parts' vectors in consecutive slices of at most `rows`, a part split where a slice ends. */
function vectorSlices(parts: readonly VectorPart[], rows: number): VectorSlicePart[][] {
  const slices: VectorSlicePart[][] = [];
  let slice: VectorSlicePart[] = [];
  let room = rows;
  for (const [part, { fileKey, from, vectors }] of parts.entries()) {
    // A part with no vectors still gets its place: writing it records that the file has all of them.
    let offset = 0;
    do {
      const taken = vectors.slice(offset, offset + room);
      slice.push({ part, fileKey, from: from + offset, vectors: taken });
      offset += taken.length;
      room -= taken.length;
      if (room === 0) {
        slices.push(slice);
        slice = [];
        room = rows;
      }
    } while (offset < vectors.length);
  }
  if (slice.length > 0) slices.push(slice);
  return slices;
}
