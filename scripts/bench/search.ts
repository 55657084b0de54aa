/**
 * Search latency of the vector store at 10k and 100k chunks: `vector`, `keyword` and `hybrid` modes
 * through the SQLite VectorStore's search, against a bare sqlite-vec KNN query on the same vec0 table.
 *
 * Chunks are synthetic: 512-dimension unit vectors around 500 random centres (embeddings cluster by
 * topic) and ~1,000 characters of Zipf-distributed pseudo-words (word frequencies in text follow Zipf).
 * Queries are a stored vector plus noise, and four Zipf words; 4,096 of them, so that no figure asks the same
 * question twice (keyword search keeps how many chunks hold a word while the index is unchanged, which an
 * exact repeat would always find: common words recur across different questions, as they do in use).
 * Recall@10 of the default (auto) vector scan against the exact scan is printed too, since above 20k chunks
 * the default is the quantized scan.
 *
 * Vectors over the whole chunk (issue 23, item 2), as knode does it (`--pieces`): the index keeps each chunk's
 * opening and a search raises its ~80 candidates' cosines to their closest later piece (src/vectors/
 * piece-similarity.ts). The same figures again once every chunk has later pieces stored, 1.6 each on average
 * (USE-lite's 2.6 windows a 1,000-character chunk on the described set, less the opening), each near its
 * chunk's vector. `--indexed-pieces`: the scheme not taken, every piece in a vec0 table of its own searched as
 * knode searches its one-vector table, the vector side's bare scans.
 *
 * Usage: bun scripts/bench/search.ts [sizes, default 10000,100000] [queries per figure, default 200] [--pieces]
 *        [--indexed-pieces]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OpenedDatabase, openDatabase } from '../../src/db/database.ts';
import { seededRandom } from '../../src/util/seeded-random.ts';
import { calibrationFor } from '../../src/vectors/calibration.ts';
import { vectorExtensionPath } from '../../src/vectors/extension.ts';
import { packLaterPieces } from '../../src/vectors/piece-similarity.ts';
import { SqliteVectorStore } from '../../src/vectors/sqlite-store.ts';
import type { SearchOptions } from '../../src/vectors/store.ts';
import type { Neighbour } from '../../src/vectors/vector-search.ts';
import { replaceFileChunks } from '../../test/helpers/vector-store.ts';
import { zipfWords } from './zipf-words.ts';

const DIMENSION = 512;
const CHUNKS_PER_FILE = 100;
/** Window-sized pieces per 1,000-character chunk with USE-lite (scripts/eval/described/pieces.ts: 2.6). */
const PIECES_PER_CHUNK = 2.6;
const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const sizes = (positional[0] ?? '10000,100000').split(',').map(Number);
const queriesPerFigure = Number(positional[1] ?? 200);
const withPieces = process.argv.includes('--pieces');
const withIndexedPieces = process.argv.includes('--indexed-pieces');

const random = seededRandom(7);
const gaussian = () => Math.sqrt(-2 * Math.log(random() || 1e-12)) * Math.cos(2 * Math.PI * random());

function normalise(vector: Float32Array): Float32Array {
  const norm = Math.hypot(...vector) || 1;
  return vector.map((value) => value / norm);
}

const centres = Array.from({ length: 500 }, () => normalise(Float32Array.from({ length: DIMENSION }, gaussian)));
function clusteredVector(): Float32Array {
  const centre = centres[Math.floor(random() * centres.length)]!;
  return normalise(centre.map((value) => value + gaussian() * 0.06));
}
function nearby(vector: Float32Array): Float32Array {
  return normalise(vector.map((value) => value + gaussian() * 0.02));
}

const zipfWord = zipfWords(random);
function text(characters: number): string {
  const words: string[] = [];
  let length = 0;
  while (length < characters) {
    const word = zipfWord();
    words.push(word);
    length += word.length + 1;
  }
  return words.join(' ');
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function time(run: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 10; i++) await run(); // warm the page cache and statement cache
  const samples: number[] = [];
  for (let i = 0; i < queriesPerFigure; i++) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function fill(store: SqliteVectorStore, datasetId: string, size: number): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  const start = performance.now();
  for (let file = 0; file * CHUNKS_PER_FILE < size; file++) {
    const chunks = Array.from({ length: Math.min(CHUNKS_PER_FILE, size - file * CHUNKS_PER_FILE) }, (_, i) => {
      const embedding = clusteredVector();
      vectors.push(embedding);
      return { content: text(1000), metadata: { source: `file-${file}.txt`, file_type: 'txt', chunk_index: i }, embedding };
    });
    await replaceFileChunks(store, datasetId, `file-${file}.txt`, chunks);
  }
  const seconds = (performance.now() - start) / 1000;
  console.log(`  inserted ${size} chunks in ${seconds.toFixed(1)} s (${Math.round(size / seconds)} chunks/s)`);
  return vectors;
}

/**
 * Every chunk's later pieces, as ingestion stores them: 1 or 2 (PIECES_PER_CHUNK - 1 on average), each near
 * the chunk's vector, in transactions of 5,000 chunks.
 */
async function addLaterPieces(opened: OpenedDatabase, datasetId: string, vectors: readonly Float32Array[]): Promise<void> {
  const rows = await opened.exclusive(
    (sqlite) =>
      sqlite.query('SELECT row_id FROM vector_chunks WHERE dataset_id = ? ORDER BY row_id').all(datasetId.toLowerCase()) as {
        row_id: number;
      }[],
  );
  for (let from = 0; from < rows.length; from += 5_000) {
    await opened.exclusive((sqlite) => {
      const update = sqlite.query('UPDATE vector_chunks SET later_pieces = ? WHERE row_id = ?');
      sqlite.transaction(() => {
        for (const [offset, { row_id }] of rows.slice(from, from + 5_000).entries()) {
          const opening = vectors[from + offset] as Float32Array;
          const later = random() < PIECES_PER_CHUNK - 2 ? 2 : 1;
          update.run(packLaterPieces([opening, ...Array.from({ length: later }, () => nearby(opening))]) as Uint8Array, row_id);
        }
      })();
    });
  }
}

/**
 * Each chunk's vector as 2 or 3 pieces (PIECES_PER_CHUNK on average), each near the chunk's own, in a vec0
 * table like a dataset's (rowid: the chunk's index × 8 + the piece's). Its own random stream, so that the
 * queries stay those of runs before it.
 */
async function fillPieces(opened: OpenedDatabase, vectors: readonly Float32Array[]): Promise<string> {
  const table = 'bench_pieces';
  const pieceRandom = seededRandom(11);
  const pieceNoise = () => Math.sqrt(-2 * Math.log(pieceRandom() || 1e-12)) * Math.cos(2 * Math.PI * pieceRandom());
  await opened.exclusive((sqlite) => {
    sqlite.run(
      `CREATE VIRTUAL TABLE ${table} USING vec0(embedding float[${DIMENSION}] distance_metric=cosine, embedding_bits bit[${DIMENSION}])`,
    );
    const insert = sqlite.query(`INSERT INTO ${table} (rowid, embedding, embedding_bits) VALUES (?, ?, vec_quantize_binary(?))`);
    sqlite.transaction(() => {
      for (const [chunk, vector] of vectors.entries()) {
        const count = pieceRandom() < PIECES_PER_CHUNK - 2 ? 3 : 2;
        for (let piece = 0; piece < count; piece++) {
          const blob = new Uint8Array(normalise(vector.map((value) => value + pieceNoise() * 0.03)).buffer);
          insert.run(chunk * 8 + piece, blob, blob);
        }
      }
    })();
  });
  return table;
}

/** The vector side's bare scans over PIECES_PER_CHUNK vectors a chunk, each chunk's best piece kept (`--pieces`). */
async function measurePieces(opened: OpenedDatabase, vectors: readonly Float32Array[], queryVector: () => Float32Array) {
  const pieces = await fillPieces(opened, vectors);
  const wantedPieces = (k: number) => Math.ceil(k * PIECES_PER_CHUNK);
  const bestPieces = (column: string, k: number) => async () => {
    const vector = queryVector();
    const blob = new Uint8Array(vector.buffer);
    const match = column === 'embedding' ? '?' : 'vec_quantize_binary(?)';
    // As knode's quantized scan (vector-search.ts): the bit scan's candidates re-scored with their float vectors.
    const rows = await opened.exclusive((sqlite) => {
      const found = sqlite
        .query(`SELECT rowid, distance FROM ${pieces} WHERE ${column} MATCH ${match} AND k = ?`)
        .all(blob, k) as Neighbour[];
      if (column === 'embedding') return found;
      const exact = sqlite.query(`SELECT vec_distance_cosine(embedding, ?) AS distance FROM ${pieces} WHERE rowid = ?`);
      return found.map(({ rowid }) => ({ rowid, distance: (exact.get(blob, rowid) as { distance: number }).distance }));
    });
    const best = new Map<number, number>();
    for (const { rowid, distance } of rows) best.set(Math.floor(rowid / 8), Math.min(best.get(Math.floor(rowid / 8)) ?? 2, distance));
  };
  for (const [name, run] of [
    [`${PIECES_PER_CHUNK} vectors per chunk: float, k=${wantedPieces(10)} (exact)`, bestPieces('embedding', wantedPieces(10))],
    [`${PIECES_PER_CHUNK} vectors per chunk: bit, k=${wantedPieces(160)} (quantized)`, bestPieces('embedding_bits', wantedPieces(160))],
  ] as const) {
    const { p50, p99 } = await time(run);
    console.log(`  ${name.padEnd(44)} p50 ${p50.toFixed(1).padStart(6)} ms   p99 ${p99.toFixed(1).padStart(6)} ms`);
  }
  await opened.exclusive((sqlite) => sqlite.run(`DROP TABLE ${pieces}`));
}

async function measure(opened: OpenedDatabase, store: SqliteVectorStore, datasetId: string, vectors: Float32Array[]) {
  const table = `vec_${datasetId.replaceAll('-', '')}`;
  const queries = Array.from({ length: 4096 }, () => ({
    vector: nearby(vectors[Math.floor(random() * vectors.length)]!),
    text: Array.from({ length: 4 }, zipfWord).join(' '),
  }));
  let next = 0;
  const query = () => queries[next++ % queries.length]!;
  const options = (mode: SearchOptions['mode'], extra: Partial<SearchOptions> = {}): SearchOptions => ({
    mode,
    limit: 10,
    similarityThreshold: 0,
    includeMetadata: true,
    calibration: calibrationFor('use-lite'),
    ...extra,
  });
  const bare = (column: string, k: number) => async () => {
    const { vector } = query();
    const blob = new Uint8Array(vector.buffer);
    const match = column === 'embedding' ? '?' : 'vec_quantize_binary(?)';
    await opened.exclusive((sqlite) =>
      sqlite.query(`SELECT rowid, distance FROM ${table} WHERE ${column} MATCH ${match} AND k = ?`).all(blob, k),
    );
  };
  const search =
    (mode: SearchOptions['mode'], extra: Partial<SearchOptions> = {}) =>
    async () => {
      const { vector, text: words } = query();
      await store.search(datasetId, vector, words, options(mode, extra));
    };
  const figures: [string, () => Promise<unknown>][] = [
    ['bare vec0 KNN, float, k=10 (exact scan)', bare('embedding', 10)],
    ['bare vec0 KNN, bit, k=160 (quantized scan)', bare('embedding_bits', 160)],
    ['vector mode (auto)', search('vector')],
    ['vector mode (exact)', search('vector', { vectorScan: 'exact' })],
    ['keyword mode', search('keyword')],
    ['hybrid mode (auto)', search('hybrid')],
    ['hybrid mode (exact vectors)', search('hybrid', { vectorScan: 'exact' })],
  ];
  for (const [name, run] of figures) {
    const { p50, p99 } = await time(run);
    console.log(`  ${name.padEnd(44)} p50 ${p50.toFixed(1).padStart(6)} ms   p99 ${p99.toFixed(1).padStart(6)} ms`);
  }
  if (withIndexedPieces) await measurePieces(opened, vectors, () => query().vector);
  let found = 0;
  for (const { vector } of queries.slice(0, 50)) {
    const exact = await store.search(datasetId, vector, '', options('vector', { vectorScan: 'exact' }));
    const auto = new Set((await store.search(datasetId, vector, '', options('vector'))).map((hit) => hit.document_id));
    found += exact.filter((hit) => auto.has(hit.document_id)).length / exact.length;
  }
  console.log(`  recall@10 of the auto vector scan against the exact scan: ${(found / 50).toFixed(3)}`);
}

for (const size of sizes) {
  const dataDir = mkdtempSync(join(tmpdir(), 'knode-bench-search-'));
  try {
    const opened = await openDatabase(dataDir, [vectorExtensionPath()]);
    const store = new SqliteVectorStore(opened);
    const datasetId = crypto.randomUUID();
    await store.createDatasetIndex(datasetId, DIMENSION);
    console.log(`${size} chunks x ${DIMENSION} dimensions (${queriesPerFigure} queries per figure, limit 10)`);
    const vectors = await fill(store, datasetId, size);
    const mapped = await opened.exclusive((sqlite) => (sqlite.query('PRAGMA mmap_size').get() as { mmap_size: number }).mmap_size);
    console.log(` as opened by openDatabase (mmap_size ${mapped}):`);
    await measure(opened, store, datasetId, vectors);
    if (withPieces) {
      await addLaterPieces(opened, datasetId, vectors);
      console.log(` with ${PIECES_PER_CHUNK - 1} later pieces a chunk on average, each candidate's cosine raised to its closest piece:`);
      await measure(opened, store, datasetId, vectors);
    }
    if (!withPieces) {
      const other = mapped > 0 ? 0 : 1024 * 1024 * 1024;
      await opened.exclusive((sqlite) => sqlite.run(`PRAGMA mmap_size = ${other}`));
      console.log(` for comparison, with PRAGMA mmap_size = ${other}:`);
      await measure(opened, store, datasetId, vectors);
    }
    await opened.close();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
