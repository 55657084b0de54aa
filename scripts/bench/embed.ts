/**
 * Embedder-alone throughput (texts per second) for 1,000-character chunks and for short sentences,
 * with 1, 16 and 64 texts per embed() call (the embedder batches inside a call as it sees fit).
 *
 * Usage: bun scripts/bench/embed.ts [spec, default use-lite] [seconds per figure, default 8]
 * e.g.   bun scripts/bench/embed.ts transformers:/path/to/model-folder
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeEmbedders, createEmbedder } from '../../src/embeddings/embedder.ts';

const spec = process.argv[2] ?? 'use-lite';
const secondsPerFigure = Number(process.argv[3] ?? 8);

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

const dataDir = mkdtempSync(join(tmpdir(), 'knode-bench-embed-'));
try {
  const loadStart = performance.now();
  const embedder = await createEmbedder(spec, { dataDir, allowDownload: false });
  await embedder.embed(['warm up']);
  console.log(`${embedder.id}: ${embedder.dimension} dimensions, ready in ${Math.round(performance.now() - loadStart)} ms`);
  for (const [label, characters] of [
    ['1,000-character chunks', 1000],
    ['short sentences (~60 characters)', 60],
  ] as const) {
    for (const perCall of [1, 16, 64]) {
      const start = performance.now();
      let done = 0;
      while (performance.now() - start < secondsPerFigure * 1000) {
        const texts = Array.from({ length: perCall }, () => text(characters));
        await embedder.embed(texts);
        done += perCall;
      }
      const rate = done / ((performance.now() - start) / 1000);
      console.log(`  ${label.padEnd(34)} ${String(perCall).padStart(2)} per call: ${rate.toFixed(1).padStart(7)} texts/s`);
    }
  }
} finally {
  await closeEmbedders();
  rmSync(dataDir, { recursive: true, force: true });
}
