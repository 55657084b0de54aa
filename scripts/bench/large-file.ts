/**
 * One very large file through the vector store, as ingestion writes it: its chunks (default 20,000 of about
 * 1,000 characters) staged and published (phase 1, keywords), then their 512-dimension vectors added in
 * windows of 256 (phase 2), while a timer on the same thread measures how long the event loop is held.
 *
 * Reported per phase: the time it takes, the longest the event loop went without turning (what a request
 * would have waited at worst), and a keyword search's latency when it is asked in the middle of the phase;
 * then the longest write transaction of the run (the indexing issue's goal: none over 200 ms).
 *
 * Usage: bun scripts/bench/large-file.ts [chunks, default 20000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/database.ts';
import { seededRandom } from '../../src/util/seeded-random.ts';
import { calibrationFor } from '../../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../../src/vectors/extension.ts';
import { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import type { SearchOptions } from '../../src/vectors/store.ts';
import { addVectors, unembedded } from '../../test/helpers/vector-store.ts';

const DIMENSION = 512;
const WINDOW = 256;
const chunkCount = Number(process.argv[2] ?? 20_000);

const random = seededRandom(11);
const WORDS = Array.from({ length: 5_000 }, (_, index) => `w${index.toString(36)}`);
/** About 1,000 characters of pseudo-words, frequent ones more often (text follows Zipf's law). */
function text(): string {
  let out = '';
  while (out.length < 1_000) out += `${WORDS[Math.floor(WORDS.length * random() ** 3)]} `;
  return out;
}
function unitVector(): Float32Array {
  const vector = Float32Array.from({ length: DIMENSION }, () => random() - 0.5);
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

/** Runs `work` while a 1 ms timer records the longest gap between two of its ticks. */
async function heldLoop<T>(work: () => Promise<T>): Promise<{ result: T; longestGapMs: number; elapsedMs: number }> {
  let longestGapMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
  }, 1);
  const started = performance.now();
  try {
    const result = await work();
    return { result, longestGapMs, elapsedMs: performance.now() - started };
  } finally {
    clearInterval(timer);
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'knode-bench-large-file-'));
const opened = await openDatabase(dataDir, [vectorExtensionPath()]);
try {
  const store = new SqliteVectorStore(opened);
  const datasetId = crypto.randomUUID();
  await store.createDatasetIndex(datasetId, DIMENSION);
  const texts = Array.from({ length: chunkCount }, text);
  const search: SearchOptions = {
    mode: 'keyword',
    limit: 10,
    similarityThreshold: 0,
    includeMetadata: false,
    calibration: calibrationFor('use-lite'),
  };
  /** A keyword search asked after `delayMs`, timed from when it is asked to its answer. */
  const searchDuring = (delayMs: number) =>
    new Promise<number>((resolve) =>
      setTimeout(async () => {
        const asked = performance.now();
        await store.search(datasetId, undefined, `${WORDS[3]} ${WORDS[40]}`, search);
        resolve(performance.now() - asked);
      }, delayMs),
    );

  // An older version of the file is visible while the new one is written: searches answer from it.
  await store.publish(
    await store.stage(datasetId, 'large.txt', { count: 10, chunk: (index) => ({ content: texts[index] as string, metadata: {} }) }),
  );

  const midKeywords = searchDuring(300);
  const keywords = await heldLoop(async () => {
    const staged = await store.stage(datasetId, 'large.txt', {
      count: chunkCount,
      chunk: (index) => ({ content: texts[index] as string, metadata: { chunk_index: index } }),
    });
    return store.publish(staged);
  });
  console.log(
    `phase 1, keywords: ${chunkCount} chunks staged and published in ${(keywords.elapsedMs / 1000).toFixed(1)} s; ` +
      `event loop held at most ${keywords.longestGapMs.toFixed(0)} ms; ` +
      `a keyword search asked meanwhile answered in ${(await midKeywords).toFixed(1)} ms`,
  );

  const vectorsOf = Array.from({ length: chunkCount }, unitVector); // made beforehand: the bench's own work would hold the loop
  const vectors = await heldLoop(async () => {
    const midVectors = searchDuring(300);
    const first = (await unembedded(store, datasetId, 'large.txt', undefined, { texts: 1, characters: 1e9 }))?.from as number;
    for (let from = first; from < first + chunkCount; from += WINDOW) {
      const count = Math.min(WINDOW, first + chunkCount - from);
      await addVectors(store, datasetId, 'large.txt', from, vectorsOf.slice(from - first, from - first + count));
    }
    return midVectors;
  });
  console.log(
    `phase 2, vectors: ${chunkCount} vectors added in windows of ${WINDOW} in ${(vectors.elapsedMs / 1000).toFixed(1)} s; ` +
      `event loop held at most ${vectors.longestGapMs.toFixed(0)} ms; ` +
      `a keyword search asked meanwhile answered in ${(await vectors.result).toFixed(1)} ms`,
  );
  console.log(`longest write transaction of the run: ${store.longestWriteMs.toFixed(0)} ms (goal: under 200 ms)`);
} finally {
  await opened.close();
  rmSync(dataDir, { recursive: true, force: true });
}
