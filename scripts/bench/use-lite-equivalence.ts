/**
 * USE-lite on ONNX Runtime gives tfjs' vectors (so a dataset's stored vectors stay valid when the engine
 * changes): cosine of each of 1,000 real chunks of this machine's documentation and of awkward texts,
 * for the full-precision model (must be >= 0.999) and the int8 one (>= 0.995). The tests check a sample
 * of 100 chunks (test/embeddings-onnx.test.ts); this is the whole proof, about a minute here (tfjs'
 * vectors are kept between runs).
 *
 * Usage: ./node_modules/.bin/bun scripts/bench/use-lite-equivalence.ts [--chunks N]
 */
import { UseLiteEmbedder } from '../../src/embeddings/use-lite.ts';
import { cosine, EDGE_TEXTS, realChunks, tfjsReference } from '../eval/use-lite-engines.ts';

const at = process.argv.indexOf('--chunks');
const count = at >= 0 ? Number(process.argv[at + 1]) || 1000 : 1000;
const texts = [...realChunks(count), ...EDGE_TEXTS];
const reference = await tfjsReference(texts);

let failed = false;
for (const [name, quantized, minimum] of [
  ['onnx', false, 0.999],
  ['onnx int8', true, 0.995],
] as const) {
  const embedder = new UseLiteEmbedder({ engine: 'onnx', threads: 2, intraOpThreads: 1, quantized });
  try {
    const started = performance.now();
    const vectors = await embedder.embed(texts);
    const seconds = (performance.now() - started) / 1000;
    const cosines = vectors.map((vector, i) => cosine(vector, reference[i] as Float32Array));
    const worst = Math.min(...cosines);
    const mean = cosines.reduce((sum, value) => sum + value, 0) / cosines.length;
    const verdict = worst >= minimum ? 'ok' : 'FAILED';
    if (worst < minimum) failed = true;
    console.log(
      `${name} vs tfjs on ${texts.length} texts: min cosine ${worst.toFixed(6)}, mean ${mean.toFixed(6)} (>= ${minimum}: ${verdict}); ${(texts.length / seconds).toFixed(0)} texts/s`,
    );
  } finally {
    await embedder.close();
  }
}
process.exit(failed ? 1 : 0);
