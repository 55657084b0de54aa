/**
 * An experiment (issue 23, item 2): does a chunk's vector over its whole text find documents better than
 * today's, which USE-lite makes from the chunk's first 128 tokens? Reads the chunks of the described set's
 * index (run `run.ts` first), embeds each chunk whole and as window-sized pieces (at word boundaries), and
 * prints vector search's recall@1, recall@5 and MRR@10 per split, documents ranked by their best chunk, with a
 * chunk's similarity: its opening's cosine (today), the normalised mean of its pieces' vectors (plain, weighted
 * by the pieces' lengths, or with the opening counted twice), its best piece, the best of both. Results are in the README ("Retrieval").
 *
 * Usage: bun scripts/eval/described/pieces.ts [--window 400]
 */
import { Database } from 'bun:sqlite';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { UseLiteEmbedder } from '../../../src/embeddings/use-lite.ts';
import { buildDescribedSet, DESCRIBED_CACHE } from './build.ts';
import { textPieces } from './text-pieces.ts';

const { values } = parseArgs({ options: { window: { type: 'string', default: '400' } } });
const WINDOW = Number(values.window);
// The committed set as this machine builds it: its fingerprint names run.ts's index.
const set = await buildDescribedSet('described');
const index = readdirSync(DESCRIBED_CACHE).find((name) => name === `index-described-${set.fingerprint}-use-lite`);
if (!index) throw new Error('no index of the described set: run scripts/eval/described/run.ts first');
const db = new Database(join(DESCRIBED_CACHE, index, 'knode.db'), { readonly: true });
const rows = db
  .query(
    "SELECT c.file_key, c.content FROM vector_chunks c JOIN vector_sets s ON s.dataset_id = c.dataset_id AND c.row_id BETWEEN s.first_row AND s.last_row AND s.state = 'visible'",
  )
  .all() as { file_key: string; content: string }[];

const embedder = new UseLiteEmbedder({});
const whole = await embedder.embed(rows.map((row) => row.content));
const pieceTexts = rows.map((row) => textPieces(row.content, WINDOW));
const flat = await embedder.embed(pieceTexts.flat());
console.log(`${rows.length} chunks, ${flat.length} pieces of at most ${WINDOW} characters`);
let at = 0;
const chunkPieces = pieceTexts.map((list) => {
  const vectors = flat.slice(at, at + list.length);
  at += list.length;
  return vectors;
});
const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, value, i) => sum + value * (b[i] as number), 0);
/** The chunk's vector as the normalised weighted sum of its pieces' vectors (one vector per chunk, as stored today). */
const pooled = (weight: (piece: string, index: number) => number) =>
  chunkPieces.map((vectors, chunk) => {
    const sum = new Float32Array(vectors[0]?.length ?? 0);
    for (const [index, vector] of vectors.entries()) {
      const w = weight((pieceTexts[chunk] as string[])[index] as string, index);
      for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) + w * (vector[i] as number);
    }
    const norm = Math.hypot(...sum) || 1;
    return sum.map((value) => value / norm);
  });
const mean = pooled(() => 1);
const byLength = pooled((piece) => piece.length);
const openingFirst = pooled((_, index) => (index === 0 ? 2 : 1));
const questions = await embedder.embed(set.answerable.map((question) => question.question));
const schemes: [string, (query: Float32Array, chunk: number) => number][] = [
  ['opening (today)', (query, chunk) => dot(query, whole[chunk] as Float32Array)],
  ['mean of pieces', (query, chunk) => dot(query, mean[chunk] as Float32Array)],
  ['pieces weighted by length', (query, chunk) => dot(query, byLength[chunk] as Float32Array)],
  ['opening twice, then pieces', (query, chunk) => dot(query, openingFirst[chunk] as Float32Array)],
  ['best piece', (query, chunk) => Math.max(...(chunkPieces[chunk] as Float32Array[]).map((vector) => dot(query, vector)))],
  [
    'best of opening and pieces',
    (query, chunk) =>
      Math.max(dot(query, whole[chunk] as Float32Array), ...(chunkPieces[chunk] as Float32Array[]).map((vector) => dot(query, vector))),
  ],
];
for (const [name, score] of schemes) {
  for (const split of ['tuning', 'held-out']) {
    let r1 = 0;
    let r5 = 0;
    let mrr = 0;
    let n = 0;
    for (const [q, question] of set.answerable.entries()) {
      if (question.split !== split) continue;
      n++;
      const best = new Map<string, number>();
      for (const [chunk, row] of rows.entries()) {
        const value = score(questions[q] as Float32Array, chunk);
        if (value > (best.get(row.file_key) ?? -2)) best.set(row.file_key, value);
      }
      const rank = [...best].sort((a, b) => b[1] - a[1]).findIndex(([file]) => file === question.relevant) + 1;
      if (rank === 1) r1++;
      if (rank >= 1 && rank <= 5) r5++;
      if (rank >= 1 && rank <= 10) mrr += 1 / rank;
    }
    console.log(
      `${name.padEnd(28)} ${split.padEnd(9)} R@1 ${(r1 / n).toFixed(3)}  R@5 ${(r5 / n).toFixed(3)}  MRR@10 ${(mrr / n).toFixed(3)}`,
    );
  }
}
await embedder.close?.();
