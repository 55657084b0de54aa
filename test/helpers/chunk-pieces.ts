/**
 * What both stores' tests of whole-chunk vectors share (chunk-pieces.test.ts on SQLite,
 * postgres-chunk-pieces.test.ts on PGlite): small unit vectors, a dataset written with its chunks' pieces
 * through the store's own operations, and the steps an index made before pieces goes through, checked alike
 * on each engine.
 */
import { expect } from 'bun:test';
import type { Calibration } from '../../src/vectors/calibration.ts';
import { packPieces } from '../../src/vectors/piece-similarity.ts';
import type { ChunkSource, VectorStore } from '../../src/vectors/store.ts';
import { unembedded } from './vector-store.ts';

/** A 4-dimensional unit vector along `index`. */
export function axis(index: number): Float32Array {
  const vector = new Float32Array(4);
  vector[index] = 1;
  return vector;
}

/** A file's chunks, their texts as given. */
export function texts(fileKey: string, contents: string[]): ChunkSource {
  return { count: contents.length, chunk: (index) => ({ content: contents[index] as string, metadata: { source: fileKey } }) };
}

/** A new dataset with one file, `a.txt`, of `contents`, its chunks' vectors written as `vectors` (one list per chunk). */
export async function indexedWithPieces(store: VectorStore, contents: string[], vectors: Float32Array[][]): Promise<string> {
  const id = crypto.randomUUID();
  await store.createDatasetIndex(id, vectors[0]?.[0]?.length ?? 4);
  expect(await store.publish(await store.stage(id, 'a.txt', texts('a.txt', contents)))).toBe(true);
  const waiting = await unembedded(store, id, 'a.txt', undefined, { texts: 100, characters: 1_000_000 });
  await store.addVectorsOf(id, [{ fileKey: 'a.txt', from: waiting?.from as number, vectors }]);
  return id;
}

/**
 * An index made before pieces: its chunks without them are found (not those with pieces, nor a file without
 * vectors), given them once, and the index moves on, dropping its calibration only when some chunk got pieces.
 * `setVectorLayout` writes the index's layout as an earlier knode left it.
 */
export async function checkIndexMadeBeforePieces(
  store: VectorStore,
  setVectorLayout: (datasetId: string, layout: number) => Promise<void>,
  calibration: Calibration,
): Promise<void> {
  const id = await indexedWithPieces(
    store,
    ['one long chunk', 'a short one', 'another long one'],
    [[axis(0)], [axis(1)], [axis(2), axis(3)]],
  );
  expect(await store.piecesComplete(id)).toBe(true);
  // What an earlier knode left: the index in layout 1, and a file whose chunks have no vector yet.
  await setVectorLayout(id, 1);
  expect(await store.publish(await store.stage(id, 'b.txt', texts('b.txt', ['not embedded yet'])))).toBe(true);
  await store.saveCalibration(id, {
    embedder: 'use-lite',
    fittedAt: '2026-11-26T00:00:00.000Z',
    questions: 10,
    unanswerable: 2,
    chunkCount: 3,
    calibration,
  });
  expect(await store.piecesComplete(id)).toBe(false);
  const limits = { texts: 100, characters: 1_000_000 };
  const waiting = await store.chunksWithoutPieces(id, 0, limits);
  expect(waiting.map((row) => row.content)).toEqual(['one long chunk', 'a short one']);
  const first = waiting[0]?.rowid as number;
  expect((await store.chunksWithoutPieces(id, first, limits)).map((row) => row.content)).toEqual(['a short one']);
  expect(await store.chunksWithoutPieces(id, 0, { texts: 100, characters: 1 })).toHaveLength(1);
  await store.addLaterPieces(id, [{ rowid: first, pieces: packPieces([axis(3)], 4) }]);
  // A chunk's pieces are written once: a second write leaves them as they are.
  await store.addLaterPieces(id, [{ rowid: first, pieces: packPieces([axis(1)], 4) }]);
  const { candidates } = await store.candidates(id, axis(3), '', 'vector', 10);
  expect(candidates.find((candidate) => candidate.rowid === first)?.cosine).toBeCloseTo(1, 5);
  // No chunk got pieces: the calibration stands. Some did: it is dropped, to be fitted again.
  await store.finishPieces(id, false);
  expect(await store.piecesComplete(id)).toBe(true);
  expect((await store.fittedCalibrations([id])).size).toBe(1);
  await store.finishPieces(id, true);
  expect((await store.fittedCalibrations([id])).size).toBe(0);
}
