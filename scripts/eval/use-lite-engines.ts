import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UseLiteEmbedder } from '../../src/embeddings/use-lite.ts';
import { useLiteModelFiles } from '../../src/embeddings/use-lite-model.ts';
import { chunkText } from '../../src/ingestion/chunker.ts';
import { readAllSources } from './sources.ts';

/**
 * USE-lite's two engines side by side (ONNX Runtime, knode's default, against tfjs, the package's own):
 * real chunks of this machine's documentation, chunked as ingestion does, awkward texts, and tfjs'
 * vectors of them. test/embeddings-onnx.test.ts checks a sample; scripts/bench/use-lite-equivalence.ts
 * checks 1,000 chunks (tfjs alone takes about 30 s for those).
 */

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return dot / Math.sqrt(normA * normB);
}

/** `count` chunks spread over every document of this machine's documentation (scripts/eval/sources.ts). */
export function realChunks(count: number): string[] {
  const all: string[] = [];
  for (const document of readAllSources()) {
    for (const section of document.sections) {
      const text = [section.heading, ...section.paragraphs].filter(Boolean).join('\n\n');
      all.push(...chunkText(text, { chunkSize: 1000, chunkOverlap: 100 }));
    }
  }
  if (all.length < count) throw new Error(`this machine's documentation gives ${all.length} chunks, ${count} are needed`);
  const step = all.length / count;
  return Array.from({ length: count }, (_, i) => all[Math.floor(i * step)] as string);
}

export /** Awkward texts: empty, spaces only, ligatures and full-width forms (NFKC), unknown characters, emoji. */
const EDGE_TEXTS = [
  '',
  ' ',
  'a',
  'What is the capital of France?',
  'ﬁnancial ｆｕｌｌ-width ① ² ½ café naïve',
  '日本語のテキスト、中文文本 и русский текст',
  '🎉🎉 emoji 👩‍👩‍👧 ⚙️ and \u{1F600}\u{1F601}\u{1F602}',
  '\u0000\u0001 control \t\ttabs\r\nand newlines\n\n\n',
  '   leading and trailing spaces   ',
  'word '.repeat(600),
];

/**
 * tfjs' vectors of `texts`, kept in the temporary folder under a key of everything that decides them (the
 * texts, the model's files, the tfjs packages' versions) and computed again whenever one of them changes.
 */
export async function tfjsReference(texts: readonly string[]): Promise<Float32Array[]> {
  const files = useLiteModelFiles();
  const versions = ['@energetic-ai/core', '@energetic-ai/embeddings'].map(
    (name) => (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version,
  );
  const hasher = new Bun.CryptoHasher('sha256').update(JSON.stringify(versions)).update(readFileSync(files.model));
  for (const path of Object.values(files.shards)) hasher.update(readFileSync(path));
  for (const text of texts) hasher.update(`${text.length}\0${text}`);
  const folder = join(tmpdir(), `knode-test-cache-${process.getuid?.() ?? 'user'}`);
  const path = join(folder, `use-lite-tfjs-${hasher.digest('hex').slice(0, 16)}.f32`);
  if (existsSync(path)) {
    const bytes = readFileSync(path);
    const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    if (all.length === texts.length * 512) return texts.map((_, i) => all.slice(i * 512, (i + 1) * 512));
  }
  const tfjs = new UseLiteEmbedder({ engine: 'tfjs', threads: 2 });
  try {
    const vectors = await tfjs.embed([...texts]);
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const all = new Float32Array(texts.length * 512);
    vectors.forEach((vector, i) => {
      all.set(vector, i * 512);
    });
    writeFileSync(`${path}.${process.pid}`, all);
    // Whole or not at all: a test run stopped while writing leaves no half file behind.
    renameSync(`${path}.${process.pid}`, path);
    return vectors;
  } finally {
    await tfjs.close();
  }
}
