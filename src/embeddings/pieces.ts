/**
 * A chunk as its embedder can read it (issue 23, item 2). A model reads a bounded number of tokens of a text
 * (its window: USE-lite 128, a `transformers:` model what its tokenizer and configuration say, an `openai:`
 * server its model's limit) and ignores the rest, or refuses it. A chunk longer than that is cut between
 * words into pieces that each fit, and gets one vector per piece: the first, its opening, is the vector the
 * index searches; the others are kept beside the chunk and raise its similarity to a query when one of them
 * is closer (piece-similarity.ts). So every word of a chunk is seen by the embedder, while keyword search
 * and answers keep the whole chunk.
 */

/** How much of a text an embedder reads. */
export interface EmbedderWindow {
  /** The tokens of one text the model reads, special tokens ([CLS], [SEP]) left out. */
  readonly tokens: number;
  /** How many tokens a word takes (a run of non-space characters, as the model sees it inside a text). */
  tokensOf(word: string): number;
}

/** A chunk's vectors, one per piece, in order: the first is its opening's, the one the index searches. */
export type ChunkVectors = readonly Float32Array[];

/**
 * At most this many pieces a chunk: a chunk of the largest `chunkSize` (100,000 characters) would otherwise
 * make about 200 USE-lite vectors, and a search reads the pieces of each of its ~80 candidates. Sixteen
 * windows are 2,048 USE-lite tokens, about 8,000 characters: every chunk of the default size (1,000) and up
 * to eight times it is seen whole; a longer one is seen up to there.
 */
export const MAX_PIECES = 16;

/**
 * The text cut between words into pieces of at most `window.tokens` tokens each (at most MAX_PIECES; the
 * first is the text's opening). A word longer than a whole window is cut inside, in proportion to its tokens.
 * A text that fits is returned whole, as it is.
 */
export function cutPieces(text: string, window: EmbedderWindow): string[] {
  // A token covers at least a byte of UTF-8 (byte-level BPE), and a UTF-16 unit is at most three: a text this
  // short fits without counting.
  if (text.length * 3 <= window.tokens) return [text];
  const pieces: string[] = [];
  let piece = '';
  let used = 0;
  const close = () => {
    if (piece.trim().length > 0) pieces.push(piece.trim());
    piece = '';
    used = 0;
  };
  for (const word of text.match(/\S+\s*/g) ?? []) {
    if (pieces.length >= MAX_PIECES) break;
    const tokens = window.tokensOf(word.trimEnd());
    if (tokens > window.tokens) {
      close();
      for (const part of splitWord(word, tokens, window.tokens)) pieces.push(part);
      continue;
    }
    if (used + tokens > window.tokens) close();
    piece += word;
    used += tokens;
  }
  close();
  if (pieces.length === 1) return [text];
  return pieces.length === 0 ? [text] : pieces.slice(0, MAX_PIECES);
}

/** A word of `tokens` tokens, longer than a window, in parts of about `window` tokens each. */
function splitWord(word: string, tokens: number, window: number): string[] {
  const trimmed = word.trimEnd();
  const size = Math.max(1, Math.floor((trimmed.length * window) / tokens));
  const parts: string[] = [];
  for (let at = 0; at < trimmed.length; at += size) parts.push(trimmed.slice(at, at + size));
  return parts;
}

/**
 * The vectors of each text's pieces (`embed` embeds a flat list of texts, in order): one list per text,
 * its opening's vector first.
 */
export async function embedChunks(
  texts: readonly string[],
  window: EmbedderWindow,
  embed: (pieces: string[]) => Promise<Float32Array[]>,
): Promise<Float32Array[][]> {
  const cut = texts.map((text) => cutPieces(text, window));
  const vectors = await embed(cut.flat());
  if (vectors.length !== cut.reduce((sum, pieces) => sum + pieces.length, 0)) {
    throw new Error(`the embedder returned ${vectors.length} vectors for ${cut.flat().length} pieces`);
  }
  const chunks: Float32Array[][] = [];
  let offset = 0;
  for (const pieces of cut) {
    chunks.push(vectors.slice(offset, offset + pieces.length));
    offset += pieces.length;
  }
  return chunks;
}

/** Words seen before, remembered up to a bound: most words of a dataset repeat, and counting them is the cost. */
const REMEMBERED_WORDS = 50_000;

/** `count` remembered per word (a map cleared when it reaches REMEMBERED_WORDS). */
export function rememberedCounts(count: (word: string) => number): (word: string) => number {
  const known = new Map<string, number>();
  return (word) => {
    const remembered = known.get(word);
    if (remembered !== undefined) return remembered;
    if (known.size >= REMEMBERED_WORDS) known.clear();
    const tokens = count(word);
    known.set(word, tokens);
    return tokens;
  };
}
