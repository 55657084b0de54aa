/**
 * Embedder-alone throughput, in one run so the figures compare.
 *
 * For `use-lite` (the default) every engine layout of src/embeddings/use-lite.ts, on the same texts:
 * tfjs on one worker thread, tfjs on its default pool, and ONNX Runtime as knode runs it (one worker,
 * one thread per core but one), with one worker using every core, with one single-thread worker per core,
 * and the int8 model (an option); each on real 1,000-character chunks
 * (this machine's documentation, chunked as ingestion does; generated text when there is too little),
 * on short sentences, and as single queries (latency). For any other spec, the same figures for it.
 *
 * Usage: bun scripts/bench/embed.ts [spec, default use-lite] [seconds per figure, default 6]
 * e.g.   bun scripts/bench/embed.ts transformers:/path/to/model-folder
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeEmbedders, createEmbedder, type Embedder } from '../../src/embeddings/embedder.ts';
import { defaultEmbeddingThreads, defaultOnnxLayout, UseLiteEmbedder } from '../../src/embeddings/use-lite.ts';
import { coreCount } from '../../src/util/cores.ts';
import { readAllSources } from '../eval/sources.ts';

const spec = process.argv[2] ?? 'use-lite';
const secondsPerFigure = Number(process.argv[3] ?? 6);

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they ' +
  'document search index knowledge vector model retrieval language sentence paragraph chapter river mountain ' +
  'history science market weather energy policy network system process result analysis method data report'
).split(' ');
let seed = 11;
function nextWord(): string {
  seed = (seed * 16807) % 2147483647;
  return WORDS[seed % WORDS.length]!;
}
function text(characters: number): string {
  let out = '';
  while (out.length < characters) out += `${nextWord()}${seed % 9 === 0 ? '. ' : ' '}`;
  return out;
}

/** Paragraph runs of this machine's documentation cut to 1,000 characters, or generated text. */
function chunksOf1000(): { texts: string[]; source: string } {
  const texts: string[] = [];
  try {
    for (const document of readAllSources()) {
      const body = document.sections.flatMap((section) => section.paragraphs).join('\n\n');
      for (let at = 0; at + 1000 <= body.length && texts.length < 4000; at += 1000) texts.push(body.slice(at, at + 1000));
    }
  } catch {
    // no documentation on this machine
  }
  if (texts.length >= 500) return { texts, source: `real text (${texts.length} chunks of this machine's documentation)` };
  return { texts: Array.from({ length: 1000 }, () => text(1000)), source: 'generated text' };
}

const chunks = chunksOf1000();
const sentences = Array.from({ length: 2000 }, () => text(60));

/** Texts per second over `secondsPerFigure`, `perCall` texts per embed() call, cycling through `pool`. */
async function rate(embedder: Embedder, pool: readonly string[], perCall: number): Promise<number> {
  let next = 0;
  let done = 0;
  const start = performance.now();
  while (performance.now() - start < secondsPerFigure * 1000) {
    const texts = Array.from({ length: perCall }, () => pool[next++ % pool.length]!);
    await embedder.embed(texts);
    done += perCall;
  }
  return done / ((performance.now() - start) / 1000);
}

async function measure(label: string, embedder: Embedder): Promise<number> {
  const loadStart = performance.now();
  await embedder.embed(['warm up']);
  const ready = Math.round(performance.now() - loadStart);
  const chunkRate = await rate(embedder, chunks.texts, 64);
  const sentenceRate = await rate(embedder, sentences, 64);
  const queryRate = await rate(embedder, sentences, 1);
  console.log(
    `  ${label.padEnd(34)} ${chunkRate.toFixed(1).padStart(7)} chunks/s  ${sentenceRate.toFixed(0).padStart(6)} sentences/s  ` +
      `query ${(1000 / queryRate).toFixed(1).padStart(5)} ms  (ready in ${ready} ms)`,
  );
  return chunkRate;
}

const dataDir = mkdtempSync(join(tmpdir(), 'knode-bench-embed-'));
try {
  console.log(`${spec} on ${coreCount()} cores; 1,000-character chunks from ${chunks.source}, 64 per call;`);
  console.log(`sentences of ~60 characters, 64 per call; a query is one sentence per call. ${secondsPerFigure} s per figure.`);
  if (spec === 'use-lite') {
    const onnx = defaultOnnxLayout();
    const layouts: [string, UseLiteEmbedder][] = [
      ['tfjs, 1 thread', new UseLiteEmbedder({ engine: 'tfjs', threads: 1 })],
      [`tfjs, ${defaultEmbeddingThreads()} threads (its default)`, new UseLiteEmbedder({ engine: 'tfjs' })],
      [`onnx, ${onnx.threads} workers x ${onnx.intraOpThreads} (default)`, new UseLiteEmbedder({ engine: 'onnx' })],
      [`onnx, 1 worker x ${coreCount()} threads`, new UseLiteEmbedder({ engine: 'onnx', threads: 1, intraOpThreads: coreCount() })],
      [`onnx, ${coreCount()} workers x 1 thread`, new UseLiteEmbedder({ engine: 'onnx', threads: coreCount(), intraOpThreads: 1 })],
      [`onnx int8, ${onnx.threads} workers x ${onnx.intraOpThreads}`, new UseLiteEmbedder({ engine: 'onnx', quantized: true })],
    ];
    const rates: number[] = [];
    for (const [label, embedder] of layouts) {
      rates.push(await measure(label, embedder));
      await embedder.close();
    }
    const base = rates[0]!;
    console.log(
      `  chunks/s against tfjs on one thread: ${rates.map((r, i) => `${layouts[i]![0].split(' (')[0]} ${(r / base).toFixed(1)}x`).join(', ')}`,
    );
  } else {
    await measure(spec, await createEmbedder(spec, { dataDir, allowDownload: false }));
  }
} finally {
  await closeEmbedders();
  rmSync(dataDir, { recursive: true, force: true });
}
